# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""The base check on the GitHub stand-in (SPEC V9, GH6): the review's job stored a git state in which the run branch
conflicts with the base; the service routes on CONFLICT or escalates with the files, never marks the pull request
ready, and spends no API call more than any mission transition."""

from __future__ import annotations

import json
from typing import Any

from app.engine.record import ReasonCode, Status
from tests.github.test_flows import REPO, SMALL_GRAPH, World, example, reach_review, world  # noqa: F401 - the fixture
from tests.github.test_flows import review_job as review_job_payload

CONFLICTED = {"head": "c0ffee" * 6 + "0000", "ahead": 2, "files_changed": ["app.py"], "conflicts": ["app.py", "b.md"]}


def with_resolve() -> dict[str, Any]:
    return {
        **SMALL_GRAPH,
        "nodes": [*SMALL_GRAPH["nodes"], {"stage": "resolve", "capability": "coding"}],
        "edges": [
            *SMALL_GRAPH["edges"],
            {"from": "review", "verdict": "CONFLICT", "to": "resolve"},
            {"from": "resolve", "verdict": "PASS", "to": "review"},
        ],
    }


def review_passes_on_a_conflicting_base(world: World, graph: dict[str, Any]) -> tuple[int, int]:
    """The review's job stored its record with the conflicting state; its end is delivered. (issue, calls)"""
    issue = reach_review(world, graph)
    record = {"seq": 2, "stage": "review", "status": "done", "answer": "VERDICT: PASS", "commits": 0}
    stored = json.dumps({**record, "git": CONFLICTED})  # what the job's deliver phase keeps (app/runner/gitstate.py)
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0002-review.json", stored)
    before = len(world.fake.calls())
    world.deliver("workflow_run", review_job_payload(issue))
    return issue, len(world.fake.calls()) - before


def test_a_conflict_routes_to_the_resolve_step_at_no_extra_call(world: World) -> None:
    # SPEC V9: the CONFLICT edge is followed; the pull request stays a draft; a mission transition's 4 calls
    issue, calls = review_passes_on_a_conflicting_base(world, with_resolve())
    run = world.run(issue)
    assert run.status is Status.RUNNING and run.stage == "resolve"
    assert world.fake.dispatches[-1]["inputs"]["stage"] == "resolve"
    assert world.fake.pulls[int(run.links["pr"])]["draft"] is True
    assert calls == 4  # the same as a mission → FAIL → mission transition (README, tests/bench/bench_github.py)


def test_a_conflict_without_an_edge_escalates_with_the_files_in_the_decision_comment(world: World) -> None:
    # SPEC V9, E2: base_conflict; the decision comment names the files; the pull request is not marked ready
    issue, _ = review_passes_on_a_conflicting_base(world, SMALL_GRAPH)
    run = world.run(issue)
    assert run.status is Status.ESCALATED and run.reason is not None
    assert run.reason.code is ReasonCode.BASE_CONFLICT and "app.py, b.md" in run.reason.message
    (decision,) = [c["body"] for c in world.fake.comments.values() if c["body"].startswith("# Decision needed")]
    assert "`base_conflict`" in decision and "- conflicts with base: app.py, b.md" in decision
    assert world.fake.pulls[int(run.links["pr"])]["draft"] is True


GATED_END = {
    "name": "small",
    "entry": "build",
    "nodes": [{"stage": "build", "capability": "coding", "humanGate": True}],
    "edges": [{"from": "build", "verdict": "PASS", "to": "__end__"}],
}


def test_an_approval_at_the_last_gate_is_checked_against_what_the_gates_job_found(world: World) -> None:
    # SPEC V9, GH5, H5: the review carries no git state (the service has no clone); the job that opened the gate
    # found the reviewed head conflicting, so the approval escalates instead of marking the pull request ready
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(GATED_END))
    _, issue = world.label()
    branch = f"interlock/issue-{issue}"
    world.fake.commit_file(REPO, branch, "app.py", "print('hello')\n")
    head = world.fake.refs[(REPO, branch)]
    found = {"head": head, "ahead": 2, "files_changed": ["app.py"], "conflicts": ["app.py"]}
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "built", "commits": 1, "git": found}
    world.job_done(issue, 1, "build", "", record=json.dumps(record))
    assert world.run(issue).status is Status.GATE_WAIT
    payload = example("pull_request_review", "submitted.payload.json")
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": branch}
    payload["pull_request"]["number"] = int(world.run(issue).links["pr"])
    payload["review"] = {**payload["review"], "state": "approved", "body": "", "user": {"login": "carol"}}
    payload["review"].update(commit_id=head, submitted_at="2099-01-01T00:00:00Z")
    world.deliver("pull_request_review", payload)
    run = world.run(issue)
    assert run.status is Status.ESCALATED and run.reason is not None
    assert run.reason.code is ReasonCode.BASE_CONFLICT
    assert f"as the last check found it, at {head[:12]}" in run.reason.message
    assert world.fake.pulls[int(run.links["pr"])]["draft"] is True  # never marked ready
    (decision,) = [c["body"] for c in world.fake.comments.values() if c["body"].startswith("# Decision needed")]
    assert "conflicts with base when last read" in decision and "app.py" in decision
