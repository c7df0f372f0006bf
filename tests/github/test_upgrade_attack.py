# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Attacks on ``/interlock resume --upgrade`` on the GitHub stand-in (SPEC J7, GH7, GH8): an issue without a
run, a stage the new version lacks, a redelivery after the run ended."""

from __future__ import annotations

import json

from app.engine.record import Status
from tests.github.test_flows import REPO, World, example, world  # noqa: F401 - the fixture
from tests.github.test_upgrade_command import GRAPH_FILE, content_hash, edited, replies, stopped_run


def test_an_upgrade_on_an_issue_without_a_run_is_answered(world: World) -> None:
    # SPEC GH7: a command on an issue (or pull request) no run belongs to is answered, never a server error
    world.comment(4242, "/interlock resume --upgrade")
    (reply,) = replies(world, 4242)
    assert "nothing changed" in reply and "issue-4242" in reply


def test_an_upgrade_at_a_stage_the_new_version_lacks_moves_nothing(world: World) -> None:
    # SPEC J7, GH7: "nothing changed" is true: the run stays on the version it was on
    issue = stopped_run(world)
    before = world.run(issue)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    world.comment(issue, "/interlock resume --upgrade at nowhere")
    run = world.run(issue)
    (reply,) = replies(world, issue)
    assert "nowhere" in reply and "nothing changed" in reply
    assert run.graph_hash == before.graph_hash != content_hash(edited(maxVisits=5))
    assert run.version == before.version and run.status is Status.INTERRUPTED


def test_a_redelivered_upgrade_after_the_run_ended_says_nothing(world: World) -> None:
    # SPEC GH8: a redelivery of a command already applied changes nothing and answers nothing
    issue = stopped_run(world)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    body = "/interlock resume --upgrade"
    payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    world.deliver("issue_comment", payload, delivery="upgrade-then-end")
    world.comment(issue, "/interlock abandon")
    ended = world.run(issue)
    assert ended.status is Status.CANCELLED
    world.deliver("issue_comment", payload, delivery="upgrade-then-end")
    assert world.run(issue).version == ended.version
    assert replies(world, issue) == []
