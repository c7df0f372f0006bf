# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""``/interlock resume --upgrade`` on the GitHub stand-in (SPEC J7): a stopped run moves to its graph's current
version on the default branch, the version it leaves kept by its hash, then resumes; anything that cannot move
is answered on the issue and changes nothing."""

from __future__ import annotations

import json
from typing import Any

from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.webhooks.upgrade_command import upgrade_stage
from tests.github.test_flows import REPO, SMALL_GRAPH, World, example, world  # noqa: F401 - the fixture

GRAPH_FILE = ".github/interlock/graphs/small.json"


def content_hash(spec: dict[str, Any]) -> str:
    graph: Graph = parse_graph(spec)
    return graph.content_hash()


def stopped_run(world: World) -> int:
    """A run of the small graph, stopped during its first mission: interrupted, resumable."""
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(SMALL_GRAPH))
    _, issue = world.label()
    world.comment(issue, "/interlock stop")
    world.job_done(issue, 1, "build", "built it")
    assert world.run(issue).status is Status.INTERRUPTED
    return issue


def edited(**build: Any) -> dict[str, Any]:
    nodes = [{**SMALL_GRAPH["nodes"][0], **build}, SMALL_GRAPH["nodes"][1]]
    return {**SMALL_GRAPH, "nodes": nodes}


def replies(world: World, issue: int) -> list[str]:
    return [c["body"] for c in world.fake.comments.values() if c["issue"] == issue and c["body"].startswith("@")]


def state_files(world: World) -> dict[str, Any]:
    return dict(world.fake.files_at(REPO, "interlock/state"))


def test_a_stopped_run_moves_to_the_current_version_and_resumes(world: World) -> None:
    # SPEC J7: the graph's current version is stored with the run, the version it leaves kept by its hash
    issue = stopped_run(world)
    before = world.run(issue)
    newer = edited(maxVisits=5)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(newer))
    dispatched = len(world.fake.dispatches)
    world.comment(issue, "/interlock resume --upgrade")
    run = world.run(issue)
    assert run.graph_hash == content_hash(newer) != before.graph_hash
    assert run.status is not Status.INTERRUPTED and not replies(world, issue)
    files = state_files(world)
    assert json.loads(files[f"runs/issue-{issue}/graph.json"])["nodes"][0]["maxVisits"] == 5
    assert f"runs/issue-{issue}/graphs/{before.graph_hash}.json" in files  # what `verify` replays the start on
    assert len(world.fake.dispatches) == dispatched + 1 and world.fake.dispatches[-1]["inputs"]["run"] == run.id


def test_a_redelivered_upgrade_changes_nothing_more(world: World) -> None:
    # SPEC J7, GH8: the move and the resume are found applied by the delivery's key
    issue = stopped_run(world)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    payload_id = "upgrade-delivery-1"
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {
        **payload["comment"],
        "body": "/interlock resume --upgrade",
        "created_at": "2099-01-02T00:00:00Z",
    }
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    world.deliver("issue_comment", payload, delivery=payload_id)
    once = world.run(issue)
    dispatches = len(world.fake.dispatches)
    world.deliver("issue_comment", payload, delivery=payload_id)
    assert world.run(issue).version == once.version and len(world.fake.dispatches) == dispatches


def test_a_version_without_the_runs_stage_is_refused_and_nothing_changes(world: World) -> None:
    # SPEC J7: the current version must still have the stage the run is at
    issue = stopped_run(world)
    before = world.run(issue)
    renamed = {
        **SMALL_GRAPH,
        "entry": "make",
        "nodes": [{**SMALL_GRAPH["nodes"][0], "stage": "make"}, SMALL_GRAPH["nodes"][1]],
        "edges": [
            {
                **edge,
                "from": "make" if edge["from"] == "build" else edge["from"],
                "to": "make" if edge["to"] == "build" else edge["to"],
            }
            for edge in SMALL_GRAPH["edges"]
        ],
    }
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(renamed))
    world.comment(issue, "/interlock resume --upgrade")
    assert world.run(issue).version == before.version and world.run(issue).status is Status.INTERRUPTED
    (reply,) = replies(world, issue)
    assert "has no stage 'build'" in reply and "nothing changed" in reply


def test_an_invalid_current_version_or_the_same_version_is_answered(world: World) -> None:
    # SPEC J7, G6: the current version is validated as at a start; being on it already says so
    issue = stopped_run(world)
    before = world.run(issue)
    world.comment(issue, "/interlock resume --upgrade")
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps({**SMALL_GRAPH, "entry": "nowhere"}))
    world.comment(issue, "/interlock resume --upgrade")
    first, second = replies(world, issue)
    assert "already on the current version of graph `small`" in first
    assert "the current version of graph `small` cannot be used" in second and "nowhere" in second
    assert world.run(issue).version == before.version


def test_a_malformed_upgrade_command_is_answered_with_the_commands(world: World) -> None:
    # SPEC GH7: `--upgrade` with anything else than `at STAGE` is not understood, and the reply lists it
    issue = stopped_run(world)
    world.comment(issue, "/interlock resume --upgrade now")
    (reply,) = replies(world, issue)
    assert "is not a command Interlock knows" in reply and "`/interlock resume --upgrade`" in reply
    assert upgrade_stage("/interlock resume --upgrade") == (True, None)
    assert upgrade_stage("/interlock Resume --UPGRADE at review\nthanks") == (True, "review")
    assert upgrade_stage("/interlock resume --upgrade now")[0] is False
    assert upgrade_stage("/interlock resume at review --upgrade")[0] is False
