# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""``interlock status|journey|money --repo OWNER/NAME RUN`` (issue 14, item 5): the reports of a run on GitHub,
read from its state branch through the API by the real console script, against the stand-in served over HTTP on
loopback — the same text and ``--json`` as the same record gives locally, and a one-line error for what can go
wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.record import Run, Status
from app.store.gitstore import GitStore
from app.store.layout import V1
from tests.github.git_github import Loopback
from tests.github.test_doctor import KEY
from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures
from tests.helpers import ROOT, doc
from tests.local.harness import make_repo

STATE = "interlock/state"
UNSET = ("GITHUB_APP_ID", "GITHUB_APP_CLIENT_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_PRIVATE_KEY_PATH",
         "GITHUB_TOKEN", "GH_TOKEN")  # fmt: skip


@pytest.fixture
def served(world: World) -> Iterator[str]:
    """A run of issue 1 that escalated, was resumed by alice and waits at its gate; the stand-in on loopback."""
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)  # failed: a decision
    world.comment(issue, "/interlock resume")
    world.job_done(issue, 2, "build", "Built it.\nVERDICT: PASS")
    assert world.run(issue).status is Status.GATE_WAIT
    with Loopback(world.fake) as loopback:
        yield loopback.url


def interlock(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if key not in UNSET}
    variables = {**base, "PYTHONPATH": str(ROOT), "COLUMNS": "300", **env}
    result = subprocess.run(
        [sys.executable, "-m", "app", *args], capture_output=True, text=True, env=variables, timeout=60, cwd=ROOT
    )
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


def app_env(url: str) -> dict[str, str]:
    return {"GITHUB_APP_ID": "12345", "GITHUB_APP_PRIVATE_KEY": KEY, "GITHUB_API_URL": url}


def local_copy(world: World, folder: Path) -> Path:
    """The run's state branch copied file by file into a local repository's journal: the same record locally."""
    make_repo(folder)
    files = {path: text.encode() for path, text in world.fake.files_at(REPO, STATE).items()}
    run = Run.from_journal(files.pop("runs/issue-1.json"))
    GitStore(folder, layout=V1).save(run, None, files)  # in the layout the service writes (app/store/layout.py)
    return folder


@pytest.mark.parametrize(
    "report",
    [
        ["status", "--draw"],
        ["status", "--json"],
        ["journey"],
        ["journey", "--json"],
        ["journey", "--routing"],  # SPEC C3: every routing line, from the events files
        ["journey", "--routing", "--json"],
        ["money"],
        ["money", "--json"],
    ],
)
def test_a_report_on_github_is_the_local_report_of_the_same_record(
    world: World, served: str, tmp_path: Path, report: list[str]
) -> None:
    # issue 14, item 5: the same renderers over the same record, whichever journal holds it
    remote = interlock(*report, "issue-1", "--repo", REPO, **app_env(served))
    assert remote.returncode == 0, remote.stderr
    assert f"(--repo {REPO} is not a folder: reading the GitHub repository {REPO})" in remote.stderr
    local = interlock(*report, "issue-1", "--repo", str(local_copy(world, tmp_path / "repo")))
    assert local.returncode == 0, local.stderr
    assert remote.stdout == local.stdout


def test_the_journey_on_github_shows_the_decision_and_who_decided(world: World, served: str) -> None:
    # SPEC E3, W2: read through the API, the journey says who resumed the run and when
    text = interlock("journey", "issue-1", "--repo", REPO, **app_env(served)).stdout
    assert "decisions:" in text
    row = next(line for line in text.splitlines() if "mission_failed" in line)
    assert "| alice " in row and "2099-01-02 00:00:00 UTC" in row and "| resume " in row
    status = interlock("status", "issue-1", "--repo", REPO, **app_env(served)).stdout
    assert "status   gate_wait at build" in status and "answer of mission #2 at build:" in status


def test_the_routing_lines_on_github_are_read_from_its_events_files(world: World, served: str) -> None:
    # SPEC C3: once the gate is approved the run has its first routing lines, read through the API
    assert (
        interlock("journey", "issue-1", "--routing", "--repo", REPO, **app_env(served)).stdout
        == "no routing lines yet\n"
    )
    world.review(1, "approved")
    lines = interlock("journey", "issue-1", "--routing", "--repo", REPO, **app_env(served)).stdout.splitlines()
    assert lines[0].startswith("v6 GateApproved: gate of build approved by carol at commit ")
    assert lines[1:] == ["v6 GateApproved: VERDICT: PASS → review"]


def test_a_token_from_the_environment_reads_the_reports_too(served: str) -> None:
    result = interlock("money", "issue-1", "--repo", REPO, "--json", GITHUB_TOKEN="ghp_x", GITHUB_API_URL=served)
    assert result.returncode == 0, result.stderr
    assert '"attempts": 2' in result.stdout and "ghp_x" not in result.stdout + result.stderr


def test_errors_are_one_line_and_exit_2(world: World, served: str) -> None:
    def error(*args: str, **env: str) -> str:
        result = interlock(*args, **env)
        assert result.returncode == 2 and result.stdout == "", result
        [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        return line

    app = app_env(served)
    assert error("status", "nope", "--repo", REPO, **app) == f"error: no run 'nope' in {STATE} of {REPO}"
    world.fake.unreadable.add("octo/ghost")
    said = error("journey", "issue-1", "--repo", "octo/ghost", **app)
    assert said == "error: the App is not installed on octo/ghost (or it does not exist): install it, then check again"
    said = error("journey", "issue-1", "--repo", "octo/ghost", GITHUB_TOKEN="t", GITHUB_API_URL=served)
    assert said == "error: no repository octo/ghost on GitHub, or the token cannot see it"
    said = error("money", "issue-1", "--repo", REPO)
    assert said.startswith("error: no GitHub credentials: set the App's (GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY")
    world.fake.fail("POST", "graphql", 403, times=3)
    said = error("status", "issue-1", "--repo", REPO, **app)
    assert said == f"error: no access to {REPO}'s state branch (403): the credentials cannot read its contents"
    world.fake.fail("GET", "/installation", 401, times=3)
    assert error("money", "issue-1", "--repo", REPO, **app).startswith("error: GitHub refused the credentials (401)")


def test_every_file_of_a_report_is_read_at_the_commit_of_the_record(world: World) -> None:
    # a save between two reads must not mix two states of the run in one report
    from app.store.github_reader import GitHubStateReader

    _, issue = world.label()
    world.job_done(issue, 1, "build", "first")
    reader = GitHubStateReader(world.app.installation(42), REPO)
    reader.load("issue-1")
    path = "runs/issue-1/missions/0001-build.json"
    world.fake.commit_file(REPO, STATE, path, '{"seq": 1, "answer": "rewritten"}')
    world.fake.commit_file(REPO, STATE, "runs/issue-1/missions/0009-later.json", "{}")
    assert b'"first"' in (reader.read(path) or b"")
    assert reader.list_files("runs/issue-1/missions/") == [path]


def test_a_run_on_github_shows_no_runner(served: str) -> None:
    text = interlock("status", "issue-1", "--repo", REPO, GH_TOKEN="ghs_y", GITHUB_API_URL=served).stdout
    assert "gate_wait" in text and "runner" not in text  # GH_TOKEN is read too
    shown = interlock("status", "issue-1", "--repo", REPO, "--json", **app_env(served)).stdout
    assert '"runner": "none"' in shown


def test_the_readme_says_how_the_reports_read_github() -> None:
    text = " ".join(doc("local/running.md", "github/appless.md").split())
    for said in (
        "The reports `status`, `journey` and `money` also read a run on GitHub: `--repo OWNER/NAME`, a name that is "
        "no folder, reads the repository's `interlock/state` branch through the API, every file at the commit of "
        "the run's record, and prints exactly what the same record prints locally, text and `--json` alike.",
        "else a token in `GITHUB_TOKEN` or `GH_TOKEN`. No credentials, an unknown repository or run, or no access "
        "is a one-line error and exit 2.",
        "a run on GitHub shows no runner in `status`.",
    ):
        assert said in text, said
