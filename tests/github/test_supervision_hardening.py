# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Supervision on GitHub (SPEC U6) against a hostile user: secrets cut at a limit, citations of folders and of
paths carrying URL syntax, and two replicas supervising one ended run. Each test was a strict xfail of
tests/github/test_review_issue13.py; it fails without its fix."""

from __future__ import annotations

import pytest

from app.engine.record import ReasonCode, Status
from app.webhooks import supervision
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture
from tests.github.test_supervision import ENDED, TEAMS, end_a_core_run, main_head, request, supervision_issues
from tests.github.test_team_queue import configure, label_payload, run_of


def test_a_secret_cut_at_the_decision_files_limit_is_not_half_shown_in_the_supervision_issue(world: World) -> None:
    # SPEC J5 and COMMON (nothing stored or printed carries a secret), README "redacted and cut": the supervision
    # issue's body (public on the repository) carries the ended run's decision file. app/webhooks/supervision.py
    # _decision_lines cuts it to 4000 bytes BEFORE the redactor runs (journal_context), so a token straddling the
    # cut keeps 19 of its characters, too few for the redactor's pattern (`ghp_` + 20 or more): they are shown
    configure(world, TEAMS.format(n=1))
    world.deliver("issues", label_payload(ENDED))
    world.job_done(ENDED, 1, "build", "", store_record=False)  # the job failed: the run escalates
    decision = f"runs/issue-{ENDED}/decision.md"
    token = "ghp_" + "Zq3vK9mW2xT7pL4nR8sY1cB6dF0hJ5gAe2Uo"
    padding = "x" * (supervision.DECISION_BYTES - 4 - 19)
    world.fake.commit_file(REPO, "interlock/state", decision, f"{padding}{token}\n")
    world.comment(ENDED, "/interlock abandon")
    [opened] = supervision_issues(world)
    assert token[:23] not in opened["body"], "19 characters of the token are in the issue"


def test_a_citation_naming_a_folder_is_refused(world: World) -> None:
    # SPEC U6 (each request cites a measured finding, a file and line; one citing a file that does not exist is
    # not filed, citation_not_found): `.github` is a folder. app/webhooks/citations.py absent() asks
    # Installation.file(), which returns GitHub's JSON listing of the folder as if it were the file's text; its
    # line 1 "exists", and the request is filed
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", request(f"Finding: .github:1@{main_head(world)}"))
    supervisor = run_of(world, 1)
    assert supervisor.status is Status.ESCALATED and supervisor.reason.code is ReasonCode.CITATION_NOT_FOUND


@pytest.mark.parametrize("path", ["README.md#gone", "README.md?gone", "README%2Emd"])
def test_a_citation_of_a_path_that_does_not_exist_is_refused_whatever_it_carries(world: World, path: str) -> None:
    # SPEC U6, README "one citing a ... file ... that does not exist is not filed": `README.md#gone` is no file
    # of the repository, but the cited path went into the contents URL as it was: the HTTP client took `#gone`
    # for a fragment (`?gone` for a query, `%2E` for a dot) and asked for README.md, which exists. Now each path
    # segment is quoted (app/github/client.py in_url), and a path with `#` or `?` (which githubkit cannot send
    # even quoted) is refused by app/webhooks/citations.py
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", request(f"Finding: {path}:1@{main_head(world)}"))
    supervisor = run_of(world, 1)
    assert supervisor.status is Status.ESCALATED and supervisor.reason.code is ReasonCode.CITATION_NOT_FOUND
    assert path in supervisor.reason.message


def test_the_adapter_reads_a_path_as_itself_and_a_folder_as_no_file(world: World) -> None:
    # SPEC U6 (a cited file is checked as cited): a file named with `%25` and a space is read as itself (unquoted,
    # `%25` reached GitHub as `%`: another path), and a folder is no file for the citation check (the raw
    # contents API answers a folder's listing as text)
    world.fake.commit_file(REPO, "main", "notes/50%25 off.md", "one\ntwo\n")
    api = world.runs().api
    assert api.file(REPO, "notes/50%25 off.md", "main") == b"one\ntwo\n"
    assert api.file_only(REPO, "notes/50%25 off.md", "main") == b"one\ntwo\n"
    assert api.folder(REPO, "notes", "main") == ["50%25 off.md"]
    assert api.file(REPO, "notes", "main") is not None and api.file_only(REPO, "notes", "main") is None
