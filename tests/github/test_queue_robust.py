# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A team's queue under bad luck (SPEC U5, issue 13 item 5): a queue file someone broke is refused with a clear
message and loses nothing; two replicas racing post each place once; a run that failed or escalated keeps its
team's place; a waiting issue carries the `interlock:queued` label."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.record import Status
from app.github.teams import TeamSettings
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from app.webhooks.teams.queue import QUEUED_LABEL, QueueUnreadable, tell_places
from tests.github.test_flows import REPO, World, example, world  # noqa: F401 - fixture
from tests.github.test_team_queue import TEAM, configure, label_payload, places, queue_file, run_of, said, trigger
from tests.helpers import doc
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled

STATE = "interlock/state"


def state_text(world: World, path: str) -> str | None:
    return world.fake.files_at(REPO, STATE).get(path)


def abandon_payload(issue: int) -> dict[str, Any]:
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {**payload["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return payload


def labels(world: World, issue: int) -> list[str]:
    return list(world.fake.labels.get((REPO, issue), []))


def test_an_unreadable_queue_file_refuses_the_trigger_with_422_and_tells_the_issue(
    world: World, settings: ServiceSettings
) -> None:
    # SPEC U5: a queue file broken by hand is no 5xx: the answer and the issue name the file and the fix
    configure(world, TEAM.format(n=1))
    trigger(world, 1)
    good = state_text(world, "queues/core.json")
    world.fake.commit_file(REPO, STATE, "queues/core.json", '{"running": [1], "waiting": [')
    body, headers = signed("issues", label_payload(2), delivery="label-2")
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    assert record.state == "failed" and "queues/core.json" in record.outcome
    told = [text for text in said(world, 2) if "cannot read the queue of team `core`" in text]
    assert len(told) == 1 and "`git log interlock/state -- queues/core.json`" in told[0]
    assert "`interlock redeliver`" in told[0] and "not JSON" in told[0]
    assert state_text(world, "queues/core.json") == '{"running": [1], "waiting": ['  # left as it is
    assert run_of(world, 2) is None and QUEUED_LABEL not in labels(world, 2)
    with pytest.raises(QueueUnreadable):  # the redelivery before the fix: refused again, told once
        world.deliver("issues", label_payload(2), delivery="label-2")
    assert len([text for text in said(world, 2) if "cannot read the queue" in text]) == 1
    assert good is not None
    world.fake.commit_file(REPO, STATE, "queues/core.json", good)  # a person restores it
    world.deliver("issues", label_payload(2), delivery="label-2")  # and redelivers: queued now, nothing lost
    assert places(world, 2) == ["**1**"] and [e["issue"] for e in queue_file(world)["waiting"]] == [2]


def test_a_queue_file_of_the_wrong_shape_at_a_runs_end_loses_nothing(world: World) -> None:
    # SPEC U5, GH8: the run's end is saved; the queue's move waits for the fix and the redelivery
    configure(world, TEAM.format(n=1))
    trigger(world, 1)
    trigger(world, 2)
    good = state_text(world, "queues/core.json")
    assert good is not None
    world.fake.commit_file(REPO, STATE, "queues/core.json", '{"running": "one", "waiting": []}')
    with pytest.raises(QueueUnreadable, match=r"queues/core\.json"):
        world.deliver("issue_comment", abandon_payload(1), delivery="abandon-1")
    assert run_of(world, 1).status is Status.CANCELLED and run_of(world, 2) is None
    told = [text for text in said(world, 1) if "cannot read the queue of team `core`" in text]
    assert len(told) == 1 and "running: Input should be a valid list" in told[0]
    world.fake.commit_file(REPO, STATE, "queues/core.json", '{"running": [], "waiting": "two"}')
    with pytest.raises(QueueUnreadable):  # broken again, another way: said again, at that state commit
        world.deliver("issue_comment", abandon_payload(1), delivery="abandon-1")
    assert len([text for text in said(world, 1) if "cannot read the queue of team `core`" in text]) == 2
    world.fake.commit_file(REPO, STATE, "queues/core.json", good)
    world.deliver("issue_comment", abandon_payload(1), delivery="abandon-1")  # GitHub's redelivery
    assert run_of(world, 2) is not None and queue_file(world)["waiting"] == []


def test_two_replicas_telling_places_at_once_post_each_place_once(world: World) -> None:
    # SPEC U5: replica A loses the compare-and-swap to replica B; only the winner's write posts the places
    configure(world, TEAM.format(n=1))
    for issue in (1, 2, 3):
        trigger(world, issue)
    queue = queue_file(world)
    for entry in queue["waiting"]:
        entry["told"] = 0  # both replicas read places not yet told
    world.fake.commit_file(REPO, STATE, "queues/core.json", json.dumps(queue))
    first, second = world.runs(), world.runs()
    team: TeamSettings = first.teams()[0]
    commit = first.store._commit
    raced: list[bool] = []

    def racing(head: str | None, changes: dict[str, bytes], message: str) -> str:
        if not raced:  # B reads, writes and posts between A's read and A's write
            raced.append(True)
            tell_places(second, team)
        return commit(head, changes, message)

    first.store._commit = racing  # type: ignore[method-assign]
    tell_places(first, team)
    assert raced and places(world, 2) == ["**1**", "**1**"] and places(world, 3) == ["**2**", "**2**"]
    tell_places(first, team)  # a redelivery: the file says each was told
    assert places(world, 2) == ["**1**", "**1**"]


def escalate(world: World, issue: int) -> None:
    """The review FAILs until the visit budget runs out (as in test_reruns)."""
    world.job_done(issue, 1, "build", "built it")
    world.review(issue, "approved")
    for seq in range(2, 40):
        stage = "review" if seq % 2 == 0 else "build"
        world.job_done(issue, seq, stage, "VERDICT: FAIL" if stage == "review" else "built")
        if run_of(world, issue).status is Status.GATE_WAIT:
            world.review(issue, "approved")
        if run_of(world, issue).status is not Status.RUNNING:
            return


@pytest.mark.parametrize("ending", ["failed", "escalated"])
def test_a_failed_or_escalated_run_keeps_its_teams_place(world: World, ending: str) -> None:
    # SPEC U5: the next starts when a run ENDS; a failed or escalated run can be resumed, so it holds its place
    configure(world, TEAM.format(n=1))
    trigger(world, 1)
    trigger(world, 2)
    if ending == "failed":
        world.job_done(1, 1, "build", "", store_record=False)
    else:
        escalate(world, 1)
    assert run_of(world, 1).status.value == ending
    assert run_of(world, 2) is None and places(world, 2) == ["**1**"]
    world.comment(1, "/interlock abandon")
    assert run_of(world, 2) is not None


def test_a_waiting_issue_is_labelled_queued_until_it_starts_or_leaves(world: World) -> None:
    # SPEC U5: `interlock:queued` on each waiting issue, removed when its run starts or it leaves the queue
    configure(world, TEAM.format(n=1))
    for issue in (1, 2, 3):
        trigger(world, issue)
    assert QUEUED_LABEL not in labels(world, 1)
    assert QUEUED_LABEL in labels(world, 2) and QUEUED_LABEL in labels(world, 3)
    world.comment(1, "/interlock abandon")
    assert QUEUED_LABEL not in labels(world, 2) and "interlock:running" in labels(world, 2)
    unlabeled = label_payload(3)
    unlabeled["action"] = "unlabeled"
    world.deliver("issues", unlabeled)
    assert QUEUED_LABEL not in labels(world, 3)


def test_the_readme_says_how_queues_hold_up() -> None:
    text = " ".join(doc("github/teams.md").split())
    assert "A run that failed, stopped or escalated can still be resumed, so it keeps its place until it ends." in text
    assert "A waiting issue carries the label `interlock:queued`, removed when its run starts or it leaves" in text
    assert "Each place is posted only after the write that decided it won, so two service replicas racing" in text
    assert "A queue file that cannot be read (edited by hand, say) is left as it is: the delivery is" in text
    assert "the issue of the event is told which file and how to fix it" in text
