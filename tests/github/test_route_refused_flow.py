# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""On GitHub, a visit refused at an edge (issue 28, part 1; SPEC E2, E3, GH7): the status comment says where the
run stands and which edge was refused, and ``/interlock route VERDICT at STAGE`` routes from the edge's source."""

from __future__ import annotations

import json

from app.engine.record import Status
from app.webhooks.router import Outcome
from tests.github.test_flows import REPO, SMALL_GRAPH, World, example, world  # noqa: F401 - fixture

LOOP = {
    **SMALL_GRAPH,
    "nodes": [{"stage": "build", "capability": "coding", "maxVisits": 5},
              {"stage": "review", "capability": "review", "maxVisits": 1}],
}  # fmt: skip


def refused(world: World) -> int:
    """build PASSes, review FAILs once: its second visit is refused on the edge build → review."""
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(LOOP))
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built\nVERDICT: PASS")
    world.job_done(issue, 2, "review", "no\nVERDICT: FAIL")
    world.job_done(issue, 3, "build", "built again\nVERDICT: PASS")
    run = world.run(issue)
    assert (run.status, run.stage) == (Status.ESCALATED, "review")
    return issue


def test_the_status_comment_names_the_refused_edge_and_both_routes(world: World) -> None:
    issue = refused(world)
    status = world.fake.comments[int(world.run(issue).links["status_comment"])]["body"]
    assert (
        "The run stands at `review`, which did not run: its visit 2 was refused on the edge `build` → `review` "
        "(PASS). `/interlock route VERDICT` passes `review` as if it had answered VERDICT; `/interlock route "
        "VERDICT at build` routes from `build` again."
    ) in status
    decision = next(c["body"] for c in world.fake.comments.values() if "# Decision needed" in c["body"])
    assert "`/interlock route PASS at build`" in decision


def test_route_at_the_edges_source_dispatches_the_refused_stage_again(world: World) -> None:
    issue = refused(world)
    dispatched = len(world.fake.dispatches)
    assert world.comment(issue, "/interlock route PASS at build") is Outcome.HANDLED
    run = world.run(issue)
    assert (run.status, run.stage, run.visits) == (Status.RUNNING, "review", {"review": 1})
    assert [d["inputs"]["stage"] for d in world.fake.dispatches[dispatched:]] == ["review"]
    assert run.decisions[-1].taken == "route PASS at build"


def test_a_route_no_stage_can_take_is_refused_in_a_reply_listing_the_choices(world: World) -> None:
    issue = refused(world)
    world.comment(issue, "/interlock route SHIP")
    reply = list(world.fake.comments.values())[-1]["body"]
    assert "no edge for 'SHIP'; its labels: PASS, FAIL; from 'build', whose edge was refused" in reply, reply
    assert "in a comment `at build`): PASS" in reply and world.run(issue).status is Status.ESCALATED


def test_a_route_past_a_gated_refused_stage_opens_its_gate_on_the_pull_request(world: World) -> None:
    # SPEC H1, GH5 (issue 28): review has a human gate; `/interlock route PASS` opens it — the pull request asks the
    # gatekeeper for a review and the gate's comment is posted — and carol's approval ends the run
    gated = {**LOOP, "nodes": [LOOP["nodes"][0], {**LOOP["nodes"][1], "humanGate": True}]}
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(gated))
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built\nVERDICT: PASS")
    world.job_done(issue, 2, "review", "no\nVERDICT: FAIL")
    world.review(issue, "approved")  # the gate of review's FAIL: back to build
    world.job_done(issue, 3, "build", "built again\nVERDICT: PASS")
    assert world.run(issue).status is Status.ESCALATED
    assert world.comment(issue, "/interlock route PASS") is Outcome.HANDLED
    run = world.run(issue)
    assert (run.status, run.gate.stage if run.gate else None) == (Status.GATE_WAIT, "review")
    assert world.fake.pulls[int(run.links["pr"])]["reviewers"] == ["carol", "carol"]  # FAIL's gate, then this
    assert any("waits at a human gate" in c["body"] for c in world.fake.comments.values())
    approval = example("pull_request_review", "submitted.payload.json")
    approval["pull_request"]["head"] = {**approval["pull_request"]["head"], "ref": f"interlock/issue-{issue}"}
    when = "2099-01-03T00:00:00Z"  # after the gate opened, with the route's comment
    approval["review"] = {**approval["review"], "state": "approved", "user": {"login": "carol"}, "submitted_at": when}
    assert world.deliver("pull_request_review", approval) is Outcome.HANDLED
    assert world.run(issue).status is Status.AWAITING_MERGE
