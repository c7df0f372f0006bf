# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A hostile review of issue 13's GitHub features (requests between repositories, supervision, team stop and
start, queues): each test shows a promise of the README or of the SPEC the merged code breaks. They are marked
``xfail(strict=True)``: the suite stays green, and a fix makes the test pass, which fails the suite until the mark
is removed."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from app.engine.errors import VersionConflict
from app.engine.record import Status
from app.github.client import Installation
from app.webhooks import handlers
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
from tests.github.test_requests import (
    LIB,
    asks_upstream,
    file_request,
    lib_job,
    lib_run,
    lib_runs,
    lib_trigger,
    request_labels,
    two_repositories,
)
from tests.github.test_supervision import ENDED, TEAMS, supervision_issues
from tests.github.test_team_hold import command as hold_command
from tests.github.test_team_hold import trigger as hold_trigger
from tests.github.test_team_hold import with_teams
from tests.github.test_team_queue import TEAM, configure, label_payload, places, queue_file, run_of, said, trigger

SELF_ACCEPTING = """base: develop
default_graph: small
gatekeepers: [carol]
upstream: [octo/app]
teams:
  intake:
    acceptsRequests: true
    autoAccept: true
    concurrency: 1
"""
NEEDS_SELF = "I need a helper.\n```request\nocto/app\nAdd a helper\nFor the feature.\n```\nVERDICT: NEEDS_UPSTREAM"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a request to its own auto-accepting team deadlocks")
def test_a_request_an_auto_accepting_team_files_to_itself_does_not_deadlock(world: World) -> None:
    # SPEC U3 (the blocked run resumes by itself), U4 (auto-accept starts the request), U5 (the next starts when a
    # run ends): team `intake` (concurrency 1, autoAccept) files a request to its own repository. The waiting run
    # is `awaiting_upstream`, which is live (app/webhooks/shell.py is_live), so it holds the team's only place
    # (app/webhooks/queue.py admit); the request it waits on is queued behind it: neither ever moves
    configure(world, SELF_ACCEPTING)
    assert world.deliver("issues", label_payload(7)) is Outcome.HANDLED
    world.job_done(7, 1, "build", NEEDS_SELF)
    assert run_of(world, 7).status is Status.AWAITING_UPSTREAM
    [filed] = [issue for issue in world.fake.issues if issue["title"] == "Add a helper"]
    assert run_of(world, world.fake.issues.index(filed) + 1) is not None, said(world, 1)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a GitHub 5xx while filing is swallowed: never retried")
def test_a_github_failure_while_filing_a_request_is_retried_by_the_redelivery(world: World) -> None:
    # SPEC GH8 (a failed delivery is recovered by its redelivery), U3 (the request is filed): GitHub answers 502
    # to the App's new issue (past the client's retries). app/webhooks/requests.py file_request catches every
    # GitHubError, 5xx included (target_config's "raise so the redelivery files it" is swallowed the same way),
    # posts "please file it by hand" with the effect's mark and answers 200: the redelivery owes nothing, no
    # request is ever filed, and the run waits on nothing (see the next test)
    two_repositories(world, auto=True)
    world.label()
    world.fake.fail("POST", f"/repos/{LIB}/issues", 502, times=10)
    with contextlib.suppress(Exception):  # the delivery failed: what GH8 wants; its redelivery comes next
        asks_upstream(world, "end-1")
    world.fake.faults.clear()
    asks_upstream(world, "end-1")
    run = world.run(1)
    assert [issue for issue in world.fake.issues if issue["repo"] == LIB], "no request was filed"
    assert run.upstream.id is not None


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="an unfileable request leaves the run waiting forever")
def test_a_request_the_app_cannot_file_does_not_leave_the_run_waiting_for_nothing(world: World) -> None:
    # SPEC U3 (the blocked run waits on its request and resumes by itself), GH9 (only a request Interlock filed
    # itself moves a run): octo/lib refuses the App's issue (404: the installation lost the repository). The run
    # stays `awaiting_upstream` with no request id, holding its team's place; the issue says "please file it by
    # hand", but a request filed by hand can never move it (GH9). Nothing escalates it: only a person's abandon
    two_repositories(world)
    world.label()
    world.fake.fail("POST", f"/repos/{LIB}/issues", 404, times=10)
    asks_upstream(world, "end-1")
    run = world.run(1)
    assert any("please file it by hand" in text for text in said(world, 1))
    assert not (run.status is Status.AWAITING_UPSTREAM and run.upstream.id is None), "waits on no request"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a rejected request is relabelled done by its live run")
def test_a_request_rejected_while_its_run_is_live_stays_rejected(world: World) -> None:
    # SPEC U3 ("rejected = closed not planned"; exactly one request:* label that says what happened upstream): the
    # request is closed as not planned while its auto-accepted run is live. The waiting run escalates and the label
    # says rejected, but the upstream run goes on, spending, and app/webhooks/requests.py follow_request relabels
    # the closed, rejected request `request:done` at its next transition
    two_repositories(world, auto=True)
    filed = file_request(world)
    assert lib_run(world, 1).status is Status.RUNNING
    assert world.deliver("issues", upstream_closed(filed["body"], 1, "not_planned")) is Outcome.HANDLED
    assert world.run(1).status is Status.ESCALATED and request_labels(world, 1) == ["request:rejected"]
    lib_job(world, 1)
    assert request_labels(world, 1) == ["request:rejected"]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a marker in a title makes a supervision a request")
def test_a_marker_copied_into_a_title_does_not_make_the_supervision_issue_a_request(world: World) -> None:
    # README "a marker copied into another issue ... changes nothing", SPEC GH9: a person titles an issue with a
    # request marker. Its run ends; the App opens the supervision issue, whose body quotes the title, so the body
    # (of an issue the App opened) carries the marker: app/webhooks/requests.py follow_request treats the
    # supervision run as a request's run, labels the issue `request:in_progress`, and at its end "tells" the run
    # the marker names, in whatever repository of the installation it names
    configure(world, TEAMS.format(n=1))
    payload = label_payload(ENDED)
    payload["issue"]["title"] = "Feature <!-- interlock:upstream run=issue-3 repo=octo/other -->"
    world.deliver("issues", payload)
    world.job_done(ENDED, 1, "build", "Built.\nVERDICT: PASS")
    world.review(ENDED, "approved")
    world.job_done(ENDED, 2, "review", "Looks right.\nVERDICT: PASS")
    world.deliver("pull_request", merged_payload(f"interlock/issue-{ENDED}"), delivery="merged")
    [opened] = supervision_issues(world)
    number = world.fake.issues.index(opened) + 1
    assert run_of(world, number).supervision
    assert request_labels(world, number, REPO) == []


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


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="two replicas filing one request file it twice")
def test_two_replicas_handling_one_filing_file_one_request(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC GH8 (several replicas; a redelivery does nothing twice), U3, U4: the delivery that filed the request is
    # handled by two replicas at once (GitHub's redelivery of a slow delivery). app/webhooks/requests.py
    # file_request checks FILED_LINK, then creates the issue, then records it: both replicas pass the check and
    # file. Replica B files and auto-starts octo/lib#1; replica A's record then names octo/lib#2, which never
    # starts: the upstream work runs on an issue the waiting run no longer names (it can never resume from it)
    two_repositories(world, auto=True)
    world.label()
    real, raced = Installation.create_issue, []

    def replica_b_in_between(self: Installation, repo: str, *args: Any, **kw: Any) -> Any:
        if repo == LIB and not raced:
            raced.append(None)
            raced[0] = asks_upstream(world, "end-1")  # replica B handles the same delivery meanwhile
        return real(self, repo, *args, **kw)

    monkeypatch.setattr(Installation, "create_issue", replica_b_in_between)
    assert asks_upstream(world, "end-1") is Outcome.HANDLED and raced == [Outcome.HANDLED]
    filed = [number for number, issue in enumerate(world.fake.issues, 1) if issue["repo"] == LIB]
    assert filed == [1], f"requests {filed}; the run waits on {world.run(1).links.get('upstream')}"


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


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="an untrusted close takes a queued request out of line")
def test_a_close_by_someone_without_permission_leaves_a_queued_request_in_line(world: World) -> None:
    # README "a close by someone without the configured permission, changes nothing", SPEC GH9, U3, U5: the
    # auto-accepted request waits in intake's queue; a person with triage permission (who may close issues, but
    # lacks the configured `write`) closes it. app/webhooks/handlers.py upstream_closed takes it out of the queue
    # (_leave_queue) BEFORE it checks who closed it, then ignores the close: the request never starts, and the run
    # waiting on it waits for ever
    two_repositories(world, auto=True)
    world.fake.permissions[(LIB, "triager")] = "triage"
    assert lib_trigger(world, 50, "lib-maintainer") is Outcome.HANDLED
    filed = file_request(world)
    number = len(world.fake.issues)
    assert lib_queue(world) == [number]
    closed = upstream_closed(filed["body"], number, "not_planned", closer="triager")
    assert world.deliver("issues", closed) is Outcome.IGNORED
    assert world.run(1).status is Status.AWAITING_UPSTREAM and request_labels(world, number) == ["request:accepted"]
    assert lib_queue(world) == [number]


def lib_queue(world: World) -> list[int]:
    data = lib_runs(world).api.file(LIB, "queues/intake.json", "interlock/state")
    return [entry["issue"] for entry in json.loads(data)["waiting"]] if data else []
