# ruff: noqa: F811  (the world fixture is imported from test_flows)
"""Review of issue 12: hostile mission records and deliveries on GitHub."""

from __future__ import annotations

import json

import pytest

from app.engine.record import Status
from app.webhooks.router import Outcome
from tests.github.test_flows import World, world  # noqa: F401


@pytest.mark.parametrize(
    "record",
    [
        '{"status": "done", "answer": "built", "usage": "lots"}',
        '{"status": "done", "answer": "built", "usage": {"cost_usd": null}}',
        '{"status": "exploded", "answer": "built"}',
        '{"status": ["done"], "answer": "built"}',
        '{"status": {"a": 1}, "answer": null, "usage": [1]}',
        '{"status": "done", "answer": "built", "duration_s": NaN, "exit_code": 1e400}',
        '{"status": "done", "answer": "built", "commits": -5, "session_id": "\\u0000"}',
        '"done"',
        "null",
    ],
)
def test_a_hostile_record_is_handled(world: World, record: str) -> None:
    _, issue = world.label()
    assert world.job_done(issue, 1, "build", "", record=record) is Outcome.HANDLED
    run = world.run(issue)
    assert run.status in (Status.GATE_WAIT, Status.FAILED, Status.RUNNING, Status.ESCALATED)
    cost = run.ledger.by_category.get("deliver")
    if cost is not None and cost.cost_usd is not None:
        assert cost.cost_usd == cost.cost_usd and 0 <= cost.cost_usd < float("inf")


@pytest.mark.parametrize("cost", ["NaN", "Infinity", "-1000"])
def test_a_cost_that_is_no_cost_is_unreported(world: World, cost: str) -> None:
    _, issue = world.label()
    record = '{"status": "done", "answer": "built", "usage": {"cost_usd": COST, "input_tokens": -7}}'.replace(
        "COST", cost
    )
    assert world.job_done(issue, 1, "build", "", record=record) is Outcome.HANDLED
    line = world.run(issue).ledger.by_category["deliver"]
    assert line.cost_usd == 0 and line.input_tokens == 0


def test_a_redelivered_job_end_applies_once(world: World) -> None:
    _, issue = world.label()
    from tests.github.test_flows import DISPATCHED, example

    world.fake.commit_file(
        world.runs().repo,
        "interlock/state",
        f"runs/issue-{issue}/missions/0001-build.json",
        json.dumps({"status": "done", "answer": "built", "usage": {"cost_usd": 0.5}}),
    )
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        "display_title": f"interlock issue-{issue} mission 1 (build)",
        "conclusion": "success",
        **DISPATCHED,
        "head_branch": f"interlock/issue-{issue}",
    }
    assert world.deliver("workflow_run", payload, delivery="d-1") is Outcome.HANDLED
    before = world.run(issue)
    world.deliver("workflow_run", payload, delivery="d-1")
    world.deliver("workflow_run", payload, delivery="d-2")  # a re-run's second delivery of the same end
    after = world.run(issue)
    assert after.version == before.version or after.ledger == before.ledger
    assert after.status is before.status


@pytest.mark.parametrize("command", ["/interlock stop", "/interlock abandon"])
def test_a_delivery_racing_a_job_end_on_one_run_is_applied_once_each(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    # the comment's delivery saves between the job end's read and its save: the job end retries on the new version
    from app.runner import driver as driver_module

    _, issue = world.label()
    real_step, raced = driver_module.step, []

    def racing_step(current, event, graph):  # type: ignore[no-untyped-def]
        if type(event).__name__ == "MissionFinished" and not raced:
            raced.append(True)
            assert world.comment(issue, command) is Outcome.HANDLED
        return real_step(current, event, graph)

    monkeypatch.setattr(driver_module, "step", racing_step)
    # after an abandon, the mission's end is one the cancelled run no longer takes
    assert world.job_done(issue, 1, "build", "built") in (Outcome.HANDLED, Outcome.IGNORED)
    assert raced  # the race did happen
    run = world.run(issue)
    names = [key for key in run.applied]
    assert len(names) == len(set(names))
    assert sum(1 for m in run.missions if m.seq == 1 and m.status is not None) <= 1
    assert len(world.fake.dispatches) == 1  # no mission after a stop or abandon
    assert run.status in (Status.CANCELLED, Status.INTERRUPTED, Status.GATE_WAIT) or run.stop_requested
    world.job_done(issue, 1, "build", "built")  # and its redelivery changes nothing
    assert world.run(issue).version == run.version


def test_a_bool_cost_and_a_null_answer_are_not_figures_or_text(world: World) -> None:
    from datetime import UTC, datetime

    from app.runner.outcomes import mission_event

    record = {"status": "done", "answer": None, "usage": {"cost_usd": True, "calls": True, "estimated": True}}
    finished = mission_event(record, "k", datetime(2026, 12, 1, tzinfo=UTC), 1)
    assert finished.answer == "" and finished.usage.cost_usd == 0 and finished.usage.calls == 0
    assert finished.usage.estimated is True
