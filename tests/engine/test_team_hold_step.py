"""A team's stop in the engine (SPEC H4, J4): a held run stops at its next transition, keeping what it waited for;
a hold lifted before that changes nothing; autopilot passes graph gates only, never the merge."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.effects import DispatchMission, Finish, PostMessage, ReadyPullRequest
from app.engine.errors import EventRejected
from app.engine.record import ReasonCode, Status
from tests.engine.driver import Driver, loop_graph
from tests.engine.test_step import UPSTREAM_ANSWER


def held_driver(waiting: str) -> Driver:
    """A run waiting on a person (a gate, a question) or on upstream, then held by its team's stop."""
    if waiting == "gate":
        d = Driver(loop_graph(work={"humanGate": True}))
        d.finish("plan")
    elif waiting == "input":
        d = Driver(loop_graph())
        d.finish("Which language?\nVERDICT: NEEDS_INPUT")
    else:
        d = Driver(loop_graph(), upstream=("acme/api",))
        d.finish(UPSTREAM_ANSWER)
    before = d.run.status
    d.apply(ev.StopRequested, hold=True, by="alice")
    assert d.run.status is before and d.run.stop_requested and not d.effects  # held, not stopped yet
    return d


@pytest.mark.parametrize(
    ("waiting", "event", "fields"),
    [
        ("gate", ev.GateApproved, {"by": "carol"}),
        ("input", ev.InputAnswered, {"text": "Python"}),
        ("upstream", ev.UpstreamChanged, {"state": "done"}),
    ],
)
def test_a_held_run_stops_at_its_next_transition_keeping_what_it_waited_for(
    waiting: str, event: type[ev.Event], fields: dict[str, str]
) -> None:
    # SPEC H4, J4: the approval, the answer or the upstream outcome is taken, and no mission is dispatched
    d = held_driver(waiting)
    d.apply(event, **fields)
    assert d.run.status is Status.INTERRUPTED and not d.of(DispatchMission)
    assert d.run.reason is not None and d.run.reason.code is ReasonCode.STOPPED
    d.apply(ev.Resume)
    assert d.dispatched().stage == ("review" if waiting == "gate" else "work")


def test_a_plain_stop_at_a_gate_still_stops_at_once() -> None:
    # SPEC J4: `/interlock stop` is unchanged: a run at a gate is interrupted there and then
    d = Driver(loop_graph(work={"humanGate": True}))
    d.finish("plan")
    d.apply(ev.StopRequested)
    assert d.run.status is Status.INTERRUPTED


@pytest.mark.parametrize("waiting", ["gate", "input", "upstream", "mission"])
def test_a_hold_withdrawn_before_it_took_effect_changes_nothing(waiting: str) -> None:
    # SPEC H4: the team started again first: the run goes on as if it had not been held
    if waiting == "mission":
        d = Driver(loop_graph())
        d.apply(ev.StopRequested, hold=True)
    else:
        d = held_driver(waiting)
    d.apply(ev.StopWithdrawn)
    assert not d.run.stop_requested
    if waiting == "mission":
        d.finish("done")
    elif waiting == "gate":
        d.apply(ev.GateApproved)
    elif waiting == "input":
        d.apply(ev.InputAnswered, text="Python")
    else:
        d.apply(ev.UpstreamChanged, state="done")
    assert d.of(DispatchMission) and d.run.status is Status.RUNNING


def test_a_withdrawal_does_not_resume_a_stopped_run() -> None:
    # SPEC H4: a run a person stopped stays stopped when its team starts again
    d = Driver(loop_graph())
    d.apply(ev.StopRequested)
    d.finish("done")
    d.apply(ev.StopWithdrawn)
    assert d.run.status is Status.INTERRUPTED and not d.effects


def test_autopilot_passes_graph_gates_but_never_merges_nor_ends_the_run() -> None:
    # SPEC H4: the merge and the validation of a delivery stay human: autopilot reaches awaiting_merge, never done
    d = Driver(loop_graph(work={"humanGate": True}, review={"humanGate": True}), autopilot=True)
    d.finish("plan")
    notes = [m.text for m in d.of(PostMessage) if m.kind == "autopilot"]
    assert notes == ["Autopilot passed the gate of `work` on PASS."]  # the gate and the verdict, named
    d.finish("looks good")
    assert d.run.status is Status.AWAITING_MERGE and d.of(ReadyPullRequest) and not d.of(Finish)
    with pytest.raises(EventRejected):
        d.apply(ev.StopRequested, hold=True)  # a finished run waits for its merge: nothing to hold
    d.apply(ev.Merged, by="carol")
    assert d.run.status is Status.DONE
