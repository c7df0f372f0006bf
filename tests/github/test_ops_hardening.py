# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Issue 14 attacked as a hostile user would: decisions, the reports against GitHub, /metrics and traces."""

from __future__ import annotations

import json

import pytest

from app.cli_remote import HEADER_REFUSED
from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures
from tests.github.test_remote_reports import STATE, app_env, interlock, served  # noqa: F401 - fixtures


def error_line(*args: str, **env: str) -> str:
    result = interlock(*args, **env)
    assert result.returncode == 2 and result.stdout == "", result
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize(
    "record",
    ["not json", "[]", '{"id": 5}', '"x"', json.dumps({"id": "issue-1", "status": ["x"]})],
)
def test_a_damaged_record_on_the_state_branch_is_one_line_and_exit_2(world: World, served: str, record: str) -> None:
    # issue 14, item 5: anyone with push access can rewrite the branch; a report says which file, in one line
    files = {**world.fake.files_at(REPO, STATE), "runs/issue-1.json": record}
    world.fake.seed_branch(REPO, STATE, files)
    for report in ("status", "journey", "money"):
        said = error_line(report, "issue-1", "--repo", REPO, **app_env(served))
        assert said.startswith("error: runs/issue-1.json on the state branch cannot be read: "), said


@pytest.mark.parametrize(
    "address",
    ["https://github.com/octo/app", "https://github.com/octo/app.git", "git@github.com:octo/app.git",
     "http://ghe.example.com/octo/app/"],
)  # fmt: skip
def test_a_repository_address_is_told_to_be_owner_and_name(address: str) -> None:
    # issue 14, item 5: a pasted address is neither a folder ("not a git repository") nor read as one
    said = error_line("journey", "issue-1", "--repo", address, GITHUB_TOKEN="t", GITHUB_API_URL="http://127.0.0.1:1")
    assert said == "error: --repo takes a folder or OWNER/NAME, not an address: --repo octo/app"


def test_a_token_that_is_no_header_value_is_never_shown(served: str) -> None:
    # credentials by allow-list, nothing printed carries one: the HTTP client's refusal quotes the header whole
    token = "sekrit-token-value\nX"
    said = error_line("status", "issue-1", "--repo", REPO, GITHUB_TOKEN=token, GITHUB_API_URL=served)
    assert "sekrit" not in said
    assert said == f"error: cannot reach GitHub for {REPO}: {HEADER_REFUSED}"
