# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A hostile review of issue 13's GitHub features (requests between repositories, supervision, team stop and
start, queues): each test shows a promise of the README or of the SPEC the merged code breaks. They are marked
``xfail(strict=True)``: the suite stays green, and a fix makes the test pass, which fails the suite until the mark
is removed."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.errors import VersionConflict
from app.engine.record import ReasonCode, Status
from app.github.client import RefConflict
from app.webhooks import handlers, supervision
from app.webhooks.router import Outcome
from tests.github.test_flows import (  # noqa: F401 - fixture
    REPO,
    World,
    example,
    merged_payload,
    retry_waits,
    upstream_closed,
    world,
)
from tests.github.test_supervision import ENDED, TEAMS, end_a_core_run, main_head, request, supervision_issues
from tests.github.test_team_hold import command as hold_command
from tests.github.test_team_hold import trigger as hold_trigger
from tests.github.test_team_hold import with_teams
from tests.github.test_team_queue import TEAM, configure, label_payload, places, queue_file, run_of, trigger


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a folder cited as `path:line@sha` passes as a file")
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


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a token cut at the decision file's limit is half shown")
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


def abandon(world: World, issue: int, delivery: str) -> Outcome:
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {**payload["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return world.deliver("issue_comment", payload, delivery=delivery)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a queued start whose dequeue failed blocks the queue")
def test_a_start_whose_dequeue_failed_does_not_block_the_queue_for_ever(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC U5 (the next starts when a run ends, whatever way it ends), GH8 (a failed delivery is redelivered):
    # issue 2's queued start made its run, then the write that takes it out of the line lost its compare-and-swap
    # five times (another replica; app/store/github.py change_json raises VersionConflict). The delivery fails and
    # is redelivered. From then on every start of the head is "the redelivery of a start"
    # (app/webhooks/handlers.py issue_labeled returns before `started`), so issue 2 stays first in line after its
    # run ended, and issue 3 never starts
    configure(world, TEAM.format(n=1))
    assert [trigger(world, issue) for issue in (1, 2, 3)] == [Outcome.HANDLED] * 3
    real, failed = handlers.started, []

    def contended(runs: Any, team: Any, issue: int) -> None:
        if issue == 2 and not failed:
            failed.append(issue)
            raise VersionConflict("queues/core.json", None, None)
        real(runs, team, issue)

    monkeypatch.setattr(handlers, "started", contended)
    with pytest.raises(VersionConflict):
        abandon(world, 1, "abandon-1")
    abandon(world, 1, "abandon-1")  # GitHub redelivers the failed delivery
    assert run_of(world, 2).status is Status.RUNNING
    abandon(world, 2, "abandon-2")
    assert run_of(world, 2).status is Status.CANCELLED
    assert run_of(world, 3) is not None, queue_file(world)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="two replicas supervising one end open two issues")
def test_two_replicas_supervising_one_end_open_one_issue(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # README "One ended run starts one supervision per supervising team", SPEC GH8 (several replicas): two replicas
    # handle the end at once (its delivery and a redelivery). Both find no record and each opens an issue
    # (app/webhooks/supervision.py supervision_issue opens before it records); the other replica records first,
    # this one loses the compare-and-swap and takes the other's issue: its own stays open, labelled `team:watch`,
    # with no run, for ever
    configure(world, TEAMS.format(n=1))
    real, calls = supervision._record, []

    def other_replica_first(runs: Any, path: str, issue: int, ended: Any, head: str | None) -> None:
        if not calls:  # the other replica opened its own issue and recorded it in between
            calls.append(issue)
            theirs = runs.api.create_issue(runs.repo, f"Supervision of run {ended.id}", "the other replica's")
            runs.api.add_labels(runs.repo, int(theirs["number"]), ["team:watch"])
            real(runs, path, int(theirs["number"]), ended, head)
            raise RefConflict("PATCH", "/git/refs/heads/interlock/state", 422, "not a fast-forward")
        real(runs, path, issue, ended, head)

    monkeypatch.setattr(supervision, "_record", other_replica_first)
    end_a_core_run(world)
    assert run_of(world, 2) is not None and run_of(world, 2).supervision  # the recorded one runs
    assert len(supervision_issues(world)) == 1, world.fake.labels


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a start racing a team stop is never held")
def test_a_queued_start_racing_a_team_stop_is_held(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # README "Stopping a team" (kept with compare-and-swap, "holds for every service replica"; queued issues do
    # not start; each live run is held at its next transition), SPEC H4: run 1 ends and replica A starts queued
    # issue 2. A reads "not stopped" (app/webhooks/handlers.py issue_labeled, is_stopped) and creates the run
    # after replica B recorded the stop and listed the team's live runs (app/webhooks/team_hold.py stop), which
    # did not include it yet. Nothing checks again: run 2 is never held, it goes past its gate and dispatches
    with_teams(world, n=1)
    hold_trigger(world, 1)
    hold_trigger(world, 2)
    real, raced = handlers.is_stopped, []

    def stop_in_between(runs: Any, team: Any) -> bool:
        seen = real(runs, team)
        if not raced:  # replica B handles the stop between A's check and A's start of issue 2
            raced.append(seen)
            assert hold_command(world, 1, "/interlock team stop") is Outcome.HANDLED
        return seen

    monkeypatch.setattr(handlers, "is_stopped", stop_in_between)
    hold_command(world, 1, "/interlock abandon")
    assert raced == [False] and run_of(world, 1).status is Status.CANCELLED
    world.job_done(2, 1, "build", "built it")
    world.review(2, "approved")
    assert run_of(world, 2).status is Status.INTERRUPTED, [d["inputs"]["run"] for d in world.fake.dispatches]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a cited path with `#` or `?` is checked as another path")
def test_a_citation_of_a_path_that_does_not_exist_is_refused_whatever_it_carries(world: World) -> None:
    # SPEC U6, README "one citing a ... file ... that does not exist is not filed": `README.md#gone` is no file
    # of the repository, but app/webhooks/citations.py absent() puts the cited path into the contents URL as it
    # is; the HTTP client takes `#gone` for a fragment and asks for README.md, which exists: the request is filed
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", request(f"Finding: README.md#gone:1@{main_head(world)}"))
    supervisor = run_of(world, 1)
    assert supervisor.status is Status.ESCALATED and supervisor.reason.code is ReasonCode.CITATION_NOT_FOUND


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="an issue queued in one team and run by another jams it")
def test_an_issue_queued_for_one_team_and_started_by_another_does_not_jam_the_first_queue(world: World) -> None:
    # SPEC U5 (further triggers queue in order and start when a run ends, whatever way it ends), SPEC GH1 (one live
    # run per issue): issue 2 waits in core's queue; a person relabels it `team:docs` and it runs at once in docs.
    # It stays first in core's line (app/webhooks/handlers.py issue_labeled queues or starts, never takes it out
    # of another team's line). When core's run 1 ends, its start is refused (issue 2 has a live run) and the loop
    # stops (app/webhooks/team_hold.py start_waiting); when docs' run ends, core's line is not looked at: core runs
    # nothing, and issue 3 waits for ever
    with_teams(world, n=1)
    for issue in (1, 2, 3):
        assert hold_trigger(world, issue) is Outcome.HANDLED
    assert hold_trigger(world, 2, "team:docs") is Outcome.HANDLED and run_of(world, 2).team == "docs"
    hold_command(world, 1, "/interlock abandon")
    hold_command(world, 2, "/interlock abandon")
    assert (run_of(world, 1).status, run_of(world, 2).status) == (Status.CANCELLED, Status.CANCELLED)
    assert run_of(world, 3) is not None, queue_file(world)["waiting"]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a queued issue whose note failed is never told")
def test_a_queued_issue_whose_note_failed_is_told_its_place_by_the_redelivery(world: World) -> None:
    # README "the waiting issue is told its place", SPEC U5 (each queued issue says its place), GH8 (a failed
    # delivery is recovered by its redelivery): the note on issue 2 fails (502). The entry was saved first
    # (app/webhooks/queue.py admit), so the redelivery finds it queued, `added` is False, and
    # app/webhooks/handlers.py _admitted posts nothing: the issue never learns it waits, nor where
    configure(world, TEAM.format(n=1))
    assert trigger(world, 1) is Outcome.HANDLED
    world.fake.fail("POST", f"/repos/{REPO}/issues/2/comments", 502, times=10)
    with pytest.raises(Exception, match="502"):
        trigger(world, 2, delivery="trigger-2")
    world.fake.faults.clear()
    assert trigger(world, 2, delivery="trigger-2") is Outcome.HANDLED
    assert run_of(world, 2) is None and queue_file(world)["waiting"][0]["issue"] == 2
    assert places(world, 2) == ["**1**"]
