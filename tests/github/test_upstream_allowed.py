"""Where a NEEDS_UPSTREAM request may go (SPEC U3, GH9): only to repositories `upstream:` lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.record import ReasonCode, Status
from app.github.config import ConfigInvalid
from app.github.config import parse_config as parse_repo_config
from app.local.config import ConfigError
from app.local.config import parse_config as parse_local_config
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World

ANSWER = "I need a change.\n```request\n{target}\nAdd retries\nThe API flakes.\n```\nVERDICT: NEEDS_UPSTREAM"


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []  # every request matched GitHub's OpenAPI description


@pytest.mark.parametrize("upstream", ["", "upstream: [octo/lib]\n", "upstream: ['octo-tools/*']\n"])
def test_a_request_to_a_repository_outside_the_list_escalates_and_files_nothing(world: World, upstream: str) -> None:
    # SPEC U3, GH9: by default nothing is allowed; the run escalates with the reason on the issue
    config = f"base: develop\ndefault_graph: small\ngatekeepers: [carol]\n{upstream}"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    _, issue = world.label()
    world.job_done(issue, 1, "build", ANSWER.format(target="octo/secrets"))
    run = world.run(issue)
    assert world.fake.filed == [] and run.upstream is None
    assert run.status is Status.ESCALATED and run.reason.code is ReasonCode.UPSTREAM_NOT_ALLOWED  # type: ignore[union-attr]
    said = [c["body"] for c in world.fake.comments.values() if "upstream_not_allowed" in c["body"]]
    assert said and "'octo/secrets'" in said[0]


def test_an_owner_wildcard_allows_every_repository_of_the_owner(world: World) -> None:
    config = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nupstream: ['OCTO/*']\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    _, issue = world.label()
    world.job_done(issue, 1, "build", ANSWER.format(target="octo/lib"))
    assert world.run(issue).status is Status.AWAITING_UPSTREAM
    assert [filed["repo"] for filed in world.fake.filed] == ["octo/lib"]


@pytest.mark.parametrize("entry", ["octo", "'*/*'", "octo/lib/x", "https://github.com/octo/lib", "octo/..", "''"])
def test_an_upstream_entry_that_is_no_repository_is_a_clear_error(entry: str) -> None:
    with pytest.raises(ConfigInvalid, match=r"upstream\.0"):
        parse_repo_config(f"upstream: [{entry}]\n".encode())
    with pytest.raises(ConfigError, match=r"upstream\.0"):
        parse_local_config(f"upstream: [{entry}]\n".encode(), Path("c.yml"))
    assert parse_repo_config(b"upstream: [octo/lib, 'octo-tools/*']\n").upstream == ["octo/lib", "octo-tools/*"]
    assert parse_local_config(b"upstream: [octo/lib]\n", Path("c.yml")).upstream == ["octo/lib"]
    assert parse_repo_config(b"base: develop\n").upstream == []


def test_the_readme_examples_of_upstream_are_valid_configuration() -> None:
    # the `upstream:` lines of both configuration examples in README.md parse and allow what they say
    from app.engine.verdict import upstream_allowed
    from tests.helpers import doc

    lines = [
        line
        for line in doc("local/configuration.md", "github/configuration.md").splitlines()
        if line.startswith("upstream: [")
    ]
    assert len(lines) == 2
    local = parse_local_config(lines[0].encode(), Path("c.yml")).upstream
    repo = parse_repo_config(lines[1].encode()).upstream
    assert upstream_allowed("acme/lib", local) and upstream_allowed("acme-tools/x", local)
    assert upstream_allowed("octo/lib", repo) and not upstream_allowed("octo/app", repo)
