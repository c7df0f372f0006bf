"""Every reader of outside input goes through app/inputfile.py (issue 11, item 10's guards everywhere).

The repository's ``.github/interlock.yml`` (any pusher to the default branch writes it), the files ``doctor``
reads from GitHub, the App-less mode's event payload (``GITHUB_EVENT_PATH``) and the service's private key
(``GITHUB_APP_PRIVATE_KEY_PATH``): a FIFO never hangs, a device is never read until memory runs out, and
text too large, not UTF-8 or nested too deeply is a clear error naming why, never a crash or a 5xx.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from app.engine.errors import InterlockError
from app.github import config as github_config
from app.github.config import ConfigInvalid, parse_config
from app.inputfile import MAX_DEPTH, InputUnreadable, parse_json_text, parse_yaml_text
from app.webhooks import appless
from app.webhooks.appless import read_payload
from app.webhooks.settings import ServiceSettings, SettingsError, settings_from_env
from tests.github.fake_github import FakeGitHub
from tests.github.test_doctor import REPO, good_files, in_process
from tests.github.test_flows import World, world  # noqa: F401 - the fixture
from tests.helpers import doc
from tests.webhooks.conftest import pem_key

DEEP_YAML = "a: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_BLOCK_YAML = "a:\n" + "".join(" " * depth + "- \n" for depth in range(1, MAX_DEPTH + 5))
DEEP_JSON = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
KEY = pem_key()


def within(seconds: float, call: Callable[[], object]) -> BaseException | object:
    """What ``call`` returned or raised, or a failure if it had not ended after ``seconds`` (a FIFO's hang)."""
    result: list[BaseException | object] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:
            result.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"still reading after {seconds}s"
    return result[0]


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def oversized(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "big"
    with path.open("wb") as handle:
        handle.truncate(size)  # sparse: the size is there without writing it
    return path


# --- text that comes from no file: the entries app/inputfile.py has for it


@pytest.mark.parametrize("text", [DEEP_YAML, DEEP_BLOCK_YAML])
def test_yaml_text_nested_too_deeply_is_refused_before_it_is_built(text: str) -> None:
    with pytest.raises(InputUnreadable, match="nested too deeply"):
        parse_yaml_text("x.yml", text)
    inner = MAX_DEPTH - 1  # the mapping is the first level
    assert parse_yaml_text("x.yml", "a: " + "[" * inner + "]" * inner)  # the limit itself is fine


def test_json_text_depth_counts_brackets_outside_strings_only() -> None:
    with pytest.raises(InputUnreadable, match="nested too deeply"):
        parse_json_text("x.json", DEEP_JSON)
    quoted = json.dumps({"a": "[" * 5000, "b": '\\"[[[' * 100})
    assert parse_json_text("x.json", quoted)["a"] == "[" * 5000


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"a: \xff\xfe", "not UTF-8"), (b"a: " + b"x" * 200, "too large"), (b"a: [", "not YAML")],
)
def test_yaml_text_too_large_or_not_utf8_is_refused(data: bytes, reason: str) -> None:
    with pytest.raises(InputUnreadable, match=reason):
        parse_yaml_text("x.yml", data, limit=100)


# --- .github/interlock.yml, from GitHub


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (DEEP_YAML.encode(), "nested too deeply"),
        (DEEP_BLOCK_YAML.encode(), "nested too deeply"),
        (b"base: \xff\n", "not UTF-8"),
        (b"base: main\n" + b"# padding\n" * 120_000, "too large"),
    ],
)
def test_a_repository_configuration_too_deep_large_or_not_utf8_is_a_config_error(text: bytes, reason: str) -> None:
    with pytest.raises(ConfigInvalid, match=reason) as caught:
        parse_config(text)
    assert github_config.CONFIG_PATH in str(caught.value)


def test_a_service_delivery_on_a_too_deep_configuration_is_a_config_error_not_a_crash(world: World) -> None:  # noqa: F811
    # SPEC GH9: what the repository holds cannot crash the handler; it is the configuration's error
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", DEEP_YAML)
    with pytest.raises(ConfigInvalid, match="nested too deeply"):
        world.label()


@pytest.mark.parametrize("config", [DEEP_YAML, DEEP_BLOCK_YAML, "base: main\n" + "# padding\n" * 120_000])
def test_a_configuration_too_deep_or_large_fails_its_delivery_naming_it(
    world: World,  # noqa: F811
    settings: ServiceSettings,
    config: str,
) -> None:
    # SPEC GH8: retrying cannot help until the configuration is fixed, so the delivery fails at once, naming it
    from fastapi.testclient import TestClient

    from app.webhooks.service import create_app
    from tests.webhooks.conftest import signed
    from tests.webhooks.queue_helpers import post_settled
    from tests.webhooks.test_malformed import labelled

    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    body, headers = signed("issues", labelled())
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    assert record.state == "failed", record
    assert record.outcome.startswith("repository configuration invalid: ")
    assert github_config.CONFIG_PATH in record.outcome
    assert world.fake.dispatches == [] and world.fake.comments == {}
    readme = " ".join(doc("graphs/validation.md", "local/doctor.md", "operating/service.md").split())
    assert (
        "So is one whose repository's `.github/interlock.yml` is invalid (too large, nested too deeply, a wrong key"
        in readme
    )


def test_doctor_reports_deep_configuration_workflow_and_graph_as_findings(settings: ServiceSettings) -> None:
    fake = FakeGitHub()
    files = {
        **good_files(),
        ".github/interlock.yml": DEEP_YAML,
        ".github/workflows/interlock.yml": DEEP_BLOCK_YAML,
        ".github/interlock/graphs/loop.json": DEEP_JSON,
    }
    fake.seed_branch(REPO, "main", files)
    fake.seed_branch(REPO, "develop", files)
    found = in_process(fake, settings)
    config = found[("repo-config", ".github/interlock.yml on main")]
    assert config["severity"] == "error" and "nested too deeply" in config["message"]
    workflow = [f for (code, _), f in found.items() if code == "workflow-file" and f["severity"] == "error"]
    assert workflow and all("nested too deeply" in f["message"] for f in workflow), workflow


# --- the App-less mode's event payload file


def test_the_event_payload_file_must_be_a_regular_utf8_json_file_of_bounded_size(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": "\xff"}')
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP_JSON)
    cases = [
        (fifo(tmp_path), "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (oversized(tmp_path, appless.PAYLOAD_LIMIT + 1), "too large"),
        (bad, "not UTF-8"),
        (deep, "nested too deeply"),
    ]
    for path, reason in cases:
        raised = within(5, lambda path=path: read_payload(path))
        assert isinstance(raised, InterlockError) and reason in str(raised), (path, raised)
    good = tmp_path / "event.json"
    good.write_text(json.dumps({"action": "labeled"}))
    assert read_payload(good) == {"action": "labeled"}


# --- the service's private key file


def test_the_private_key_path_must_be_a_regular_utf8_file_of_bounded_size(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_bytes(KEY.encode().replace(b"-----BEGIN", b"\xff-----BEGIN"))
    cases = [
        (fifo(tmp_path), "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (oversized(tmp_path, 10 * 1024 * 1024), "too large"),
        (bad, "not UTF-8"),
    ]
    for path, reason in cases:
        env = {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_PRIVATE_KEY_PATH": str(path)}
        raised = within(5, lambda env=env: settings_from_env(env))
        assert isinstance(raised, SettingsError), (path, raised)
        assert f"GITHUB_APP_PRIVATE_KEY_PATH={str(path)!r} cannot be read: " in str(raised) and reason in str(raised)


def test_the_readme_states_the_limits_the_readers_apply() -> None:
    from app.github.config import CONFIG_LIMIT
    from app.inputfile import MAX_INPUT_BYTES
    from app.webhooks.settings import KEY_LIMIT

    text = " ".join(doc("graphs/validation.md", "local/doctor.md", "operating/service.md").split())
    said = text[text.index("The files of `--team`") : text.index("never a crash.")]
    mib, kib = 1024 * 1024, 1024
    assert 16 * mib == MAX_INPUT_BYTES and "at most 16 MiB" in said and f"{MAX_DEPTH} levels" in said
    assert 64 * kib == KEY_LIMIT and "(`GITHUB_APP_PRIVATE_KEY_PATH`, at most 64 KiB)" in said
    assert 25 * mib == appless.PAYLOAD_LIMIT and "(`GITHUB_EVENT_PATH`, at most 25 MiB)" in said
    assert 1 * mib == CONFIG_LIMIT and "`.github/interlock.yml` (at most 1 MiB)" in said


@pytest.mark.parametrize(
    ("text", "reason"),
    [(DEEP_JSON, "nested too deeply"), ('{"a": ' * 3000 + "1" + "}" * 3000, "nested too deeply")],
)
def test_a_graph_of_the_repository_nested_too_deeply_is_reported_on_the_issue_not_a_crash(
    world: World,  # noqa: F811
    text: str,
    reason: str,
) -> None:
    # SPEC G6, GH1: a graph in the repository's graphsets is input anyone who can push writes, read with the same
    # limits; a label naming it gets the comment saying why it cannot start, never a RecursionError (a 5xx)
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", text)
    outcome, issue = world.label()
    assert outcome.value == "handled"
    said = [comment["body"] for comment in world.fake.comments.values()]
    assert len(said) == 1 and "graph `small` is not valid" in said[0] and reason in said[0], said
    assert world.runs().store.find(f"issue-{issue}") is None
