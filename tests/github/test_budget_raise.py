"""On the GitHub stand-in: a run stopped at its call budget is raised with `/interlock budget` and finishes (SPEC P5).

A person without write permission, or a raise written wrong, gets a reply and changes nothing; the ledger keeps
who raised the limit and when; the refused mission is dispatched once, and no accepted one again.
"""

from __future__ import annotations

import json

from app.engine.record import Status
from app.local.reports import money_report
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture
from tests.helpers import doc

LOOP = {
    "name": "small",
    "entry": "build",
    "policy": {"maxCalls": 2},
    "nodes": [{"stage": "build", "capability": "coding"}, {"stage": "review", "capability": "review"}],
    "edges": [
        {"from": "build", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
        {"from": "review", "verdict": "FAIL", "to": "build"},
    ],
}


def replies(stand_in: World) -> list[str]:
    return [comment["body"] for comment in stand_in.fake.comments.values()]


def test_a_writer_raises_the_budget_with_a_comment_and_the_run_finishes(world: World) -> None:  # noqa: F811
    # SPEC P5, GH7
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(LOOP))
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    world.job_done(issue, 2, "review", "no tests\nVERDICT: FAIL")
    run = world.run(issue)
    assert (run.status, run.stage) == (Status.ESCALATED, "build") and run.reason.code.value == "call_budget_exhausted"
    assert "2 of 2 calls used; the next call needs 1 more" in run.reason.message
    assert any("`/interlock budget calls=+2`" in body for body in replies(world) if body.startswith("# Decision"))
    dispatched = len(world.fake.dispatches)

    world.comment(issue, "/interlock budget calls=+2", user="mallory")  # read permission only
    world.comment(issue, "/interlock budget calls=+two")
    world.comment(issue, "/interlock budget calls=-1")
    world.comment(issue, "/interlock budget time=+1")
    said = replies(world)
    assert any("@mallory only people with write permission can steer" in body for body in said)
    assert any("`calls=+two` is not a number" in body and "nothing changed" in body for body in said)
    assert any("`calls=-1` does not raise anything" in body for body in said)
    assert any("`time=+1` is not a budget to raise" in body for body in said)
    unchanged = world.run(issue)
    assert unchanged.version == run.version and len(world.fake.dispatches) == dispatched

    world.comment(issue, "/interlock budget calls=+2")
    raised = world.run(issue)
    assert raised.status is Status.RUNNING and raised.policy.max_calls == 4
    assert [(r.by, r.stage, r.text()) for r in raised.ledger.raises] == [("alice", "build", "calls=+2")]
    assert len(world.fake.dispatches) == dispatched + 1 and world.fake.dispatches[-1]["inputs"]["mission"] == "3"
    assert any("Decided: budget calls=+2 by alice" in body for body in replies(world))
    world.job_done(issue, 3, "build", "added tests")
    world.job_done(issue, 4, "review", "VERDICT: PASS")
    done = world.run(issue)
    assert done.status is Status.AWAITING_MERGE and done.mission_count == 4
    assert done.ledger.calls == sum(line.calls for line in done.ledger.by_category.values()) == 4
    assert "| alice | build | calls=+2 |" in money_report(done)

    world.comment(issue, "/interlock budget calls=+2")
    assert any("not stopped by a budget (awaiting_merge)" in body for body in replies(world))


def test_a_raise_of_a_run_whose_team_is_stopped_is_refused(world: World) -> None:  # noqa: F811
    # SPEC P5, H4: a raise goes on with the run, and stopping stays human: only `team start` lifts a team's stop
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(LOOP))
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    world.comment(issue, "/interlock team stop")
    world.comment(issue, "/interlock budget calls=+2")
    run = world.run(issue)
    assert run.status is Status.ESCALATED and not run.ledger.raises
    assert "is stopped; `/interlock team start` resumes its runs; nothing changed." in replies(world)[-1]
    world.comment(issue, "/interlock team start")
    world.comment(issue, "/interlock budget calls=+2")
    assert world.run(issue).status is Status.RUNNING
    readme = " ".join(doc("github/teams.md", "graphs/engine.md").split())
    assert "a raise of a run whose team is stopped, like a resume" in readme
