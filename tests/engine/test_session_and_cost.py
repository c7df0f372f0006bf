"""The agent's session kept while a mission runs (SessionStarted), and costs that are not known."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.decision import render_decision
from app.engine.errors import StaleEvent
from app.engine.record import Category, MissionKind, MissionStatus, ReasonCode, Status, Usage
from tests.engine.driver import Driver, loop_graph


def test_a_session_named_mid_mission_is_what_a_resume_after_a_crash_continues() -> None:
    # SPEC J3: the interrupted mission resumes first, kind resume, with the agent's own session
    d = Driver(loop_graph())
    d.apply(ev.SessionStarted, seq=1, session_id="sess-1")
    assert d.effects == []
    assert d.run.status is Status.RUNNING and d.run.waiting is not None
    assert d.run.waiting.session_id == "sess-1"
    assert d.run.mission(1).session_id == "sess-1"  # type: ignore[union-attr]
    d.apply(ev.Resume)  # the runner died: nobody ever reported mission 1
    resumed = d.dispatched()
    assert (resumed.seq, resumed.kind, resumed.session_id) == (2, MissionKind.RESUME, "sess-1")
    assert d.run.mission(1).status is MissionStatus.CRASHED  # type: ignore[union-attr]


def test_the_same_session_event_twice_changes_nothing() -> None:
    # SPEC J2: an event whose key was applied is a no-op
    d = Driver(loop_graph())
    d.apply(ev.SessionStarted, key="run-1/mission/1/session/s", seq=1, session_id="s")
    before = d.run
    d.apply(ev.SessionStarted, key="run-1/mission/1/session/s", seq=1, session_id="s")
    assert d.run is before and d.effects == []


def test_a_finished_mission_that_repeats_no_session_keeps_the_one_named_earlier() -> None:
    # SPEC J3: the session id stays with the mission once known
    d = Driver(loop_graph())
    d.apply(ev.SessionStarted, seq=1, session_id="early")
    d.finish("VERDICT: PASS", session_id=None)
    assert d.run.mission(1).session_id == "early"  # type: ignore[union-attr]


@pytest.mark.parametrize("seq", [2, 0])
def test_a_session_for_a_mission_not_awaited_is_refused(seq: int) -> None:
    # SPEC J2: an event about something the run does not wait for changes nothing
    d = Driver(loop_graph())
    with pytest.raises(StaleEvent):
        d.apply(ev.SessionStarted, seq=seq, session_id="late")
    assert d.run.waiting is not None and d.run.waiting.session_id is None


def test_an_unknown_cost_is_counted_apart_never_as_zero() -> None:
    # SPEC P3: usage is recorded as reported; an unknown cost is not spend of $0
    d = Driver(loop_graph())
    d.finish("VERDICT: PASS", usage=Usage(calls=1, input_tokens=500, output_tokens=20, cost_usd=None))
    d.finish("VERDICT: FAIL", usage=Usage(calls=1, cost_usd=0.25))
    assert d.run.mission(1).usage.cost_usd is None  # type: ignore[union-attr]
    assert d.run.ledger.by_category[Category.DELIVER].unknown_costs == 1
    assert d.run.ledger.unknown_costs() == 1 and d.run.ledger.spent_usd() == 0.25
    assert d.run.status is Status.RUNNING  # no cost limit: nothing stops the run


def test_a_cost_limit_stops_the_run_when_a_cost_is_unknown_and_a_resume_rearms_it() -> None:
    # SPEC P1, P2: a cost limit that cannot be checked stops the run before the next call; B4: resume re-arms
    d = Driver(loop_graph(policy={"maxCostUsd": 5.0}))
    d.finish("VERDICT: PASS", usage=Usage(calls=1, input_tokens=500, cost_usd=None))
    assert d.run.status is Status.ESCALATED
    reason = d.run.reason
    assert reason is not None and reason.code is ReasonCode.COST_BUDGET_EXHAUSTED
    assert "the cost of 1 call(s) is unknown" in reason.message and "`prices`" in reason.message
    d.apply(ev.Resume)
    assert d.dispatched().stage == "review"


def test_a_cost_limit_with_known_costs_under_it_goes_on() -> None:
    # SPEC P1: known spend under the limit does not stop the run
    d = Driver(loop_graph(policy={"maxCostUsd": 5.0}))
    d.finish("VERDICT: PASS", usage=Usage(calls=1, cost_usd=0.5, estimated=True))
    assert d.run.status is Status.RUNNING and d.dispatched().stage == "review"


def test_the_decision_file_says_costs_are_unknown() -> None:
    # SPEC E2: the decision file lists what a person should know before deciding
    d = Driver(loop_graph())
    d.finish("VERDICT: PASS", usage=Usage(calls=1, cost_usd=None))
    text = render_decision(d.run, d.graph, None)
    assert "- the cost of 1 call(s) is unknown: not counted in the spend" in text
