# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A team's queue and stop under a hostile review (SPEC U5, H4, GH8): an issue started by another team leaves the
first team's line, a start whose dequeue failed does not block the line, a start racing a team stop is held, a
queued issue whose note failed is told by the redelivery, and a stop file broken by hand is refused with 422."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.errors import VersionConflict
from app.engine.record import Status
from app.webhooks.router import Outcome
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from app.webhooks.teams import start as team_start
from app.webhooks.teams.hold import HoldUnreadable
from tests.github.test_flows import REPO, World, example, world  # noqa: F401 - fixture
from tests.github.test_team_hold import command as hold_command
from tests.github.test_team_hold import trigger as hold_trigger
from tests.github.test_team_hold import with_teams
from tests.github.test_team_queue import TEAM, configure, label_payload, places, queue_file, run_of, trigger
from tests.helpers import doc
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled

STATE = "interlock/state"


def abandon(world: World, issue: int, delivery: str) -> Outcome:
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {**payload["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return world.deliver("issue_comment", payload, delivery=delivery)


def test_an_issue_queued_for_one_team_and_started_by_another_does_not_jam_the_first_queue(world: World) -> None:
    # SPEC U5 (further triggers queue in order and start when a run ends, whatever way it ends), SPEC GH1 (one live
    # run per issue): issue 2 waits in core's queue; a person relabels it `team:docs` and it runs at once in docs:
    # it leaves core's line, and issue 3 starts when core's run 1 ends
    with_teams(world, n=1)
    for issue in (1, 2, 3):
        assert hold_trigger(world, issue) is Outcome.HANDLED
    assert hold_trigger(world, 2, "team:docs") is Outcome.HANDLED and run_of(world, 2).team == "docs"
    assert [entry["issue"] for entry in queue_file(world)["waiting"]] == [3]
    hold_command(world, 1, "/interlock abandon")
    hold_command(world, 2, "/interlock abandon")
    assert (run_of(world, 1).status, run_of(world, 2).status) == (Status.CANCELLED, Status.CANCELLED)
    assert run_of(world, 3) is not None, queue_file(world)["waiting"]


def test_a_head_that_runs_already_is_passed_over_by_the_queue_move(world: World) -> None:
    # SPEC U5, GH1: an issue first in line whose run is live already (a line file left behind) is refused its
    # start, leaves the line, and the next one starts
    with_teams(world, n=1)
    for issue in (1, 2, 3):
        assert hold_trigger(world, issue) is Outcome.HANDLED
    ahead = queue_file(world)
    assert hold_trigger(world, 2, "team:docs") is Outcome.HANDLED
    world.fake.commit_file(REPO, STATE, "queues/core.json", json.dumps(ahead))  # 2 first again
    hold_command(world, 1, "/interlock abandon")
    assert run_of(world, 2).team == "docs" and run_of(world, 3) is not None, queue_file(world)


def test_a_start_whose_dequeue_failed_does_not_block_the_queue_for_ever(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC U5 (the next starts when a run ends, whatever way it ends), GH8 (a failed delivery is redelivered):
    # issue 2's queued start made its run, then the write that takes it out of the line lost its compare-and-swap
    # five times. The delivery fails and is redelivered: the redelivery of the start takes it out of the line, so
    # issue 3 starts when run 2 ends
    configure(world, TEAM.format(n=1))
    assert [trigger(world, issue) for issue in (1, 2, 3)] == [Outcome.HANDLED] * 3
    real, failed = team_start.started, []

    def contended(runs: Any, team: Any, issue: int) -> None:
        if issue == 2 and not failed:
            failed.append(issue)
            raise VersionConflict("queues/core.json", None, None)
        real(runs, team, issue)

    monkeypatch.setattr(team_start, "started", contended)
    with pytest.raises(VersionConflict):
        abandon(world, 1, "abandon-1")
    abandon(world, 1, "abandon-1")  # GitHub redelivers the failed delivery
    assert run_of(world, 2).status is Status.RUNNING
    abandon(world, 2, "abandon-2")
    assert run_of(world, 2).status is Status.CANCELLED
    assert run_of(world, 3) is not None, queue_file(world)


def test_a_queued_start_racing_a_team_stop_is_held(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # README "Stopping a team" (each live run is held at its next transition), SPEC H4: run 1 ends and replica A
    # starts queued issue 2. A reads "not stopped" and creates the run after replica B recorded the stop and
    # listed the team's live runs, which did not include it yet: A reads the stop again once the start is
    # recorded, and holds run 2; `team start` resumes it
    with_teams(world, n=1)
    hold_trigger(world, 1)
    hold_trigger(world, 2)
    real, raced = team_start.is_stopped, []

    def stop_in_between(runs: Any, team: Any) -> bool:
        seen = real(runs, team)
        if not raced:  # replica B handles the stop between A's check and A's start of issue 2
            raced.append(seen)
            assert hold_command(world, 1, "/interlock team stop") is Outcome.HANDLED
        return seen

    monkeypatch.setattr(team_start, "is_stopped", stop_in_between)
    hold_command(world, 1, "/interlock abandon")
    assert raced == [False] and run_of(world, 1).status is Status.CANCELLED
    world.job_done(2, 1, "build", "built it")
    world.review(2, "approved")
    assert run_of(world, 2).status is Status.INTERRUPTED, [d["inputs"]["run"] for d in world.fake.dispatches]
    assert hold_command(world, 1, "/interlock team start") is Outcome.HANDLED
    assert run_of(world, 2).status is Status.RUNNING


def test_a_queued_issue_whose_note_failed_is_told_its_place_by_the_redelivery(world: World) -> None:
    # README "the waiting issue is told its place", SPEC U5 (each queued issue says its place), GH8 (a failed
    # delivery is recovered by its redelivery): the note on issue 2 fails (502) after the entry was saved; the
    # entry is marked told only once the note is posted, so the redelivery posts it, once
    configure(world, TEAM.format(n=1))
    assert trigger(world, 1) is Outcome.HANDLED
    world.fake.fail("POST", f"/repos/{REPO}/issues/2/comments", 502, times=10)
    with pytest.raises(Exception, match="502"):
        trigger(world, 2, delivery="trigger-2")
    world.fake.faults.clear()
    assert queue_file(world)["waiting"][0]["told"] == 0
    assert trigger(world, 2, delivery="trigger-2") is Outcome.HANDLED
    assert run_of(world, 2) is None and queue_file(world)["waiting"][0]["issue"] == 2
    assert places(world, 2) == ["**1**"] and queue_file(world)["waiting"][0]["told"] == 1
    assert trigger(world, 2, delivery="trigger-2") is Outcome.HANDLED and places(world, 2) == ["**1**"]


def test_an_unreadable_stop_file_refuses_with_422_and_says_how_to_fix_it(
    world: World, settings: ServiceSettings
) -> None:
    # SPEC H4, README "Stopping a team": a stop file broken by hand is no 5xx: the answer names the file and
    # the fix, the file is left as it is, and once restored the redelivery starts the run
    configure(world, TEAM.format(n=1))
    assert trigger(world, 1) is Outcome.HANDLED and hold_command(world, 1, "/interlock abandon") is Outcome.HANDLED
    world.fake.commit_file(REPO, STATE, "teams/core.json", '{"stopped": tru')
    body, headers = signed("issues", label_payload(2), delivery="label-2")
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    detail = record.outcome
    assert record.state == "failed" and "cannot read the stop file of team `core`" in detail
    assert "not JSON" in detail and "`git log interlock/state -- teams/core.json`" in detail
    assert "`interlock redeliver`" in detail and run_of(world, 2) is None
    world.fake.commit_file(REPO, STATE, "teams/core.json", '{"stopped": [1]}')  # JSON, of the wrong shape
    with pytest.raises(HoldUnreadable, match=r"teams/core\.json.*not a team's stop file"):
        hold_command(world, 2, "/interlock team stop")
    assert world.fake.files_at(REPO, STATE).get("teams/core.json") == '{"stopped": [1]}'  # left as it is
    world.fake.commit_file(REPO, STATE, "teams/core.json", '{"stopped": false}')  # a person fixes it
    assert world.deliver("issues", label_payload(2), delivery="label-2") is Outcome.HANDLED
    assert run_of(world, 2).status is Status.RUNNING


def test_the_readme_says_what_the_tests_above_check() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("github/teams.md").split())
    for sentence in (
        "A waiting issue's first note is recorded as told only once it is posted, so a note that failed is posted "
        "by the redelivery.",
        "An issue that starts in another team (relabelled `team:<name>` while it waited) leaves the queue, and so "
        "does a first waiting issue whose run is already live: the next one starts.",
        "A run whose start raced the stop is held too: its start reads the stop again once it is recorded.",
        "A stop file that cannot be read is left as it is, and the delivery is answered 422 with the file and how "
        "to fix it, like a queue file.",
    ):
        assert sentence in text, sentence
