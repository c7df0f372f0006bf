"""A decision's label may end a run, so its event carries the delivery's git state too (SPEC V9)."""

from __future__ import annotations

from datetime import UTC, datetime

from app.engine.events import DecisionReturned
from app.engine.record import MissionKind
from app.runner.outcomes import outcome_event


def test_a_decision_record_with_a_git_state_gives_an_event_with_it() -> None:
    # SPEC V9: the job stores the state with every call's record; the decision's event must not drop it
    record = {"status": "done", "answer": "VERDICT: PASS", "git": {"head": "abc", "conflicts": ["greet.py"]}}
    event = outcome_event(MissionKind.DECIDE, record, "k", datetime(2026, 12, 2, tzinfo=UTC), 4)
    assert isinstance(event, DecisionReturned) and event.git is not None and event.git.conflicts == ("greet.py",)
