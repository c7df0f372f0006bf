# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Supervision on GitHub (SPEC U6) against a hostile user: secrets cut at a limit, citations of folders and of
paths carrying URL syntax, and two replicas supervising one ended run. Each test was a strict xfail of
tests/github/test_review_issue13.py; it fails without its fix."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.errors import VersionConflict
from app.engine.record import ReasonCode, Status
from app.github.client import Installation
from app.webhooks.router import Outcome
from app.webhooks.teams import supervision
from tests.github.test_flows import REPO, World, merged_payload, world  # noqa: F401 - fixture
from tests.github.test_supervision import (
    ENDED,
    TEAMS,
    end_a_core_run,
    main_head,
    numbered_from_one,  # noqa: F401 - fixture
    request,
    supervision_issues,
)
from tests.github.test_team_queue import configure, label_payload, run_of
from tests.helpers import doc


def test_a_secret_cut_at_the_decision_files_limit_is_not_half_shown_in_the_supervision_issue(world: World) -> None:
    # SPEC J5 and COMMON (nothing stored or printed carries a secret), README "redacted and cut": the supervision
    # issue's body (public on the repository) carries the ended run's decision file. app/webhooks/teams/supervision.py
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
    # not filed, citation_not_found): `.github` is a folder. app/webhooks/teams/citations.py absent() asks
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
    # even quoted) is refused by app/webhooks/teams/citations.py
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


def supervisor(world: World) -> tuple[Any, Any]:
    """What a second replica's supervision of the ended run is given: the supervising team and the ended run."""
    runs = world.runs()
    [team] = [team for team in runs.teams() if team.name == "watch"]
    return team, runs.store.load(f"issue-{ENDED}")


def end_without_merge(world: World) -> None:
    world.deliver("issues", label_payload(ENDED))
    world.job_done(ENDED, 1, "build", "Built the greeting.\nVERDICT: PASS")
    world.review(ENDED, "approved")
    world.job_done(ENDED, 2, "review", "Looks right.\nVERDICT: PASS")


def merged(world: World) -> Outcome:
    return world.deliver("pull_request", merged_payload(f"interlock/issue-{ENDED}"), delivery=f"merged-{ENDED}")


def test_two_replicas_supervising_one_end_open_one_issue(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # README "One ended run starts one supervision per supervising team", SPEC GH8 (several replicas), U6: two
    # replicas handle the end at once. Replica B comes between A's intent and A's issue: it finds the intent and
    # no issue, and fails (its redelivery comes back); A opens the one issue and records it; B's redelivery finds
    # it. (Before the fix each opened an issue: the loser's stayed open, labelled `team:watch`, with no run.)
    configure(world, TEAMS.format(n=1))
    real, raced = Installation.create_issue, []

    def replica_b_first(self: Installation, repo: str, title: str, *args: Any, **kw: Any) -> Any:
        if title.startswith("Supervision of run") and not raced:
            with pytest.raises(VersionConflict):
                supervision.supervision_issue(world.runs(), *supervisor(world), "replica B")
            raced.append(title)
        return real(self, repo, title, *args, **kw)

    monkeypatch.setattr(Installation, "create_issue", replica_b_first)
    end_a_core_run(world)
    assert raced and len(supervision_issues(world)) == 1, world.fake.labels
    assert run_of(world, 1) is not None and run_of(world, 1).supervision
    assert supervision.supervision_issue(world.runs(), *supervisor(world), "B's redelivery") == 1


def test_a_crash_between_opening_and_recording_opens_no_second_issue(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC GH8 (a failed delivery is recovered by its redelivery), U6: the replica opened the issue and stopped
    # before recording its number; the redelivery finds the intent, then the issue by its marker, and starts it
    configure(world, TEAMS.format(n=1))
    real, crashed = supervision._record, []

    def crash_once(*args: Any) -> None:
        if not crashed:
            crashed.append(args)
            raise RuntimeError("the replica stopped")
        real(*args)

    monkeypatch.setattr(supervision, "_record", crash_once)
    end_without_merge(world)
    with pytest.raises(RuntimeError, match="stopped"):
        merged(world)
    assert len(supervision_issues(world)) == 1 and run_of(world, 1) is None
    merged(world)  # GitHub's redelivery
    assert len(supervision_issues(world)) == 1 and run_of(world, 1) is not None and run_of(world, 1).supervision


def test_a_crash_between_the_intent_and_the_issue_is_taken_over_once_the_intent_is_old(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC GH8, U6: the replica wrote the intent and stopped before opening the issue. A redelivery soon after
    # cannot tell it from a replica still opening: it fails, opening nothing; once the intent is older than
    # CLAIM_SECONDS, the next redelivery takes it over and opens the one issue
    configure(world, TEAMS.format(n=1))
    real, stopped = Installation.create_issue, []

    def stop_once(self: Installation, repo: str, title: str, *args: Any, **kw: Any) -> Any:
        if title.startswith("Supervision of run") and not stopped:
            stopped.append(title)
            raise RuntimeError("the replica stopped")
        return real(self, repo, title, *args, **kw)

    monkeypatch.setattr(Installation, "create_issue", stop_once)
    end_without_merge(world)
    with pytest.raises(RuntimeError, match="stopped"):
        merged(world)
    with pytest.raises(VersionConflict):
        merged(world)
    assert supervision_issues(world) == []
    monkeypatch.setattr(supervision, "CLAIM_SECONDS", -1)
    merged(world)
    assert len(supervision_issues(world)) == 1 and run_of(world, 1) is not None and run_of(world, 1).supervision


def test_the_readme_says_how_supervision_holds_against_replicas_and_odd_citations() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("github/teams.md").split())
    for sentence in (
        "Two service replicas handling one end, or a redelivery after a crash, open one issue: the intent to open "
        "it is written on the state branch first, with compare-and-swap, and the issue carries a marker by which "
        "a redelivery finds it.",
        "A request citing a folder as a file, or a path with `#` or `?`, is refused the same way.",
        "A cited commit is one GitHub finds by its sha in the repository, which includes the commits of its forks.",
    ):
        assert sentence in text, sentence
