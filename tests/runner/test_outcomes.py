"""One way from a mission's outcome to the engine's event, for every shell: outcome -> record -> event."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.agents.base import AgentOutcome
from app.engine.events import AdviceReturned, DecisionReturned, GitState, MissionFinished
from app.engine.record import MissionKind, MissionStatus, Usage
from app.runner.outcomes import mission_record, outcome_event, record_event
from tests.runner.test_properties import RUNS

AT = datetime(2026, 12, 1, tzinfo=UTC)
USAGE = Usage(calls=2, input_tokens=100, output_tokens=20, cost_usd=None, seconds=1.5)
OUTCOME = AgentOutcome(
    status=MissionStatus.DONE,
    answer="revise: split the step",
    exit_code=0,
    usage=USAGE,
    session_id="s-1",
    duration_s=1.5,
    agent="python agent.py",
    model="m-1",
)


def test_a_finished_mission_becomes_the_same_event_through_its_record() -> None:
    # SPEC C5, P3: what the engine hears of a mission is what its record says, figure for figure
    record = mission_record("run-1", 1, "build", MissionKind.DELIVER, OUTCOME, commits=2, prompt="do it")
    git = GitState(head="abc", ahead=2, files_changed=("a.txt",))
    event = outcome_event(MissionKind.DELIVER, record, "key", AT, 1, git)
    assert event == MissionFinished(
        key="key",
        at=AT,
        seq=1,
        status=MissionStatus.DONE,
        answer=OUTCOME.answer,
        usage=USAGE,
        commits=2,
        session_id="s-1",
        exit_code=0,
        duration_s=1.5,
        agent="python agent.py",
        model="m-1",
        git=git,
    )


def test_an_unknown_cost_in_a_jobs_record_stays_unknown() -> None:
    # SPEC P3: a cost the agent did not report is unknown, never 0 — on GitHub as on a local run
    record = mission_record("run-1", 1, "build", MissionKind.DELIVER, OUTCOME)
    event = record_event(RUNS[MissionKind.DELIVER], record, "key", AT, 1)
    assert isinstance(event, MissionFinished) and event.usage.cost_usd is None and event.usage.input_tokens == 100


@pytest.mark.parametrize("status", [MissionStatus.DONE, MissionStatus.TIMEOUT])
def test_a_decision_and_advice_are_read_from_the_record_of_their_call(status: MissionStatus) -> None:
    # SPEC E4: an advisor that did not end done gives no advice; a decision that did not gives no answer
    outcome = OUTCOME.with_(status=status)
    decided = outcome_event(MissionKind.DECIDE, mission_record("r", 3, "s", MissionKind.DECIDE, outcome), "k", AT, 3)
    advised = outcome_event(MissionKind.ADVISOR, mission_record("r", 3, "s", MissionKind.ADVISOR, outcome), "k", AT, 3)
    done = status is MissionStatus.DONE
    assert isinstance(decided, DecisionReturned) and decided.answer == (OUTCOME.answer if done else "")
    assert isinstance(advised, AdviceReturned) and advised.status is status
    assert (advised.advice, advised.instruction) == (("revise", "split the step") if done else (None, ""))
    assert decided.usage == advised.usage == USAGE
