"""The events people cause, and what GitHub tells of a run's pull request and upstream request: gates
(SPEC H2, H3), stops (J4), resumes (B4, J3), routes, deliveries and abandons chosen by hand (E3), answers to
questions (V6), the upstream request's progress (U3), and the pull request merged or closed (GH6).

Each handler changes the transition's own copy of the run or raises ``EventRejected`` and changes nothing;
``app/engine/step.py`` looks them up by event type.
"""

from __future__ import annotations

from typing import assert_never

from app.engine.budget import arm
from app.engine.context import add_note
from app.engine.decision import refused_hop
from app.engine.decisions import close_decision, open_decision_of
from app.engine.effects import Finish, MessageKind, PostMessage
from app.engine.errors import EventRejected
from app.engine.events import (
    Abandon,
    Closed,
    Deliver,
    Event,
    GateAmended,
    GateApproved,
    InputAnswered,
    Linked,
    Merged,
    Resume,
    RouteChosen,
    StopRequested,
    StopWithdrawn,
    UpstreamChanged,
)
from app.engine.flow import (
    NOT_MISSIONS,
    dispatch,
    enter,
    escalate,
    follow,
    interrupt,
    note_person,
    reach_end,
    settle,
)
from app.engine.gates import approved_line, check_duties, check_hand_past_gate, check_review
from app.engine.graph.model import END
from app.engine.record import RESUMABLE, Choice, MissionKind, MissionStatus, ReasonCode, Status, UpstreamState
from app.engine.routing import open_gate
from app.engine.rules import Change
from app.engine.transition import Transition
from app.engine.verdict import Routing, route_verdict

WAITING_ON_OTHERS = (Status.GATE_WAIT, Status.AWAITING_INPUT, Status.AWAITING_UPSTREAM)


def reject(t: Transition, event: Event, message: str) -> EventRejected:
    return EventRejected(t.run.id, t.run.status.value, type(event).__name__, message)


def require(t: Transition, event: Event, *statuses: Status) -> None:
    if t.run.status not in statuses:
        wanted = " or ".join(s.value for s in statuses)
        raise reject(t, event, f"the run must be {wanted}")


def on_gate_approved(t: Transition, event: GateApproved) -> None:
    require(t, event, Status.GATE_WAIT)
    gate = t.run.gate
    assert gate is not None
    check_review(t, gate, event)  # SPEC H5
    check_duties(t, event)  # SPEC H6
    note_person(t, f"Gate approved at {gate.stage} by {event.by or 'a person'}", event.note)
    t.run.status = Status.RUNNING
    t.add_line(approved_line(gate, event))
    edge = route_verdict(t.graph, gate.stage, gate.verdict).edge
    assert edge is not None
    follow(t, edge, by=event.by or "gate", commit=event.commit or gate.head or "")


def on_gate_amended(t: Transition, event: GateAmended) -> None:
    require(t, event, Status.GATE_WAIT)
    gate = t.run.gate
    assert gate is not None
    check_review(t, gate, event)  # SPEC H5
    note_person(t, f"Amendment at {gate.stage} by {event.by or 'a person'}", event.note)
    t.run.gate = None
    t.run.status = Status.RUNNING
    t.add_line(f"gate of {gate.stage}: changes requested")
    dispatch(t, MissionKind.AMEND, note=event.note)


def on_stop(t: Transition, event: StopRequested) -> None:
    """Mark the stop; it takes effect before the next mission or when the running one returns (SPEC J4). A team's
    stop (``hold``) of a run that waits on a person or upstream takes effect at its next transition too."""
    if t.run.status in (Status.INTERRUPTED, Status.FAILED, Status.ESCALATED):
        return  # already stopped: the reason it stopped for is kept
    if t.run.status is Status.AWAITING_MERGE:
        raise reject(t, event, "the run is finished and waits for a person to merge; close the pull request instead")
    in_flight = t.run.status is Status.RUNNING and t.run.waiting is not None
    if in_flight or (event.hold and t.run.status in WAITING_ON_OTHERS):
        t.run.stop_requested = True
        return
    interrupt(t)


def on_stop_withdrawn(t: Transition, event: StopWithdrawn) -> None:
    """A hold lifted before it took effect: the run goes on; one that is stopped already stays stopped."""
    t.run.stop_requested = False


def on_resume(t: Transition, event: Resume) -> None:
    """Re-enter with budgets re-armed (SPEC B4, J3); an interrupted mission resumes first, in its own session."""
    crashed = t.run.status is Status.RUNNING and t.run.waiting is not None
    if t.run.status not in RESUMABLE and not crashed:
        raise reject(t, event, "only a stopped, failed, escalated or waiting run can be resumed")
    if event.stage is not None and not t.graph.has_stage(event.stage):
        raise reject(t, event, f"graph {t.graph.name!r} has no stage {event.stage!r}")
    waiting = t.run.waiting
    at = event.stage if event.stage not in (None, t.run.stage) else None
    if at is not None:
        check_hand_past_gate(t, event)  # SPEC H6: resuming elsewhere leaves a gated stage unpassed
    close_decision(t, Choice.RESUME, f"resume at {at}" if at else "resume", event.by)
    _rearm(t)
    if waiting is not None and waiting.kind not in NOT_MISSIONS and event.stage in (None, waiting.stage):
        settle(t, waiting.seq, status=MissionStatus.CRASHED)
        t.run.stage = waiting.stage
        t.run.visits = {waiting.stage: 1}
        dispatch(t, MissionKind.RESUME, session_id=waiting.session_id)
        return
    enter(t, event.stage or t.run.stage)


def _rearm(t: Transition) -> None:
    run = t.run
    run.visits, run.window, run.reason, run.gate, run.waiting = {}, arm(run.ledger), None, None, None
    run.stop_requested, run.reasked, run.status = False, False, Status.RUNNING


def on_route(t: Transition, event: RouteChosen) -> None:
    """A person routes on a verdict of their choice from the current stage (SPEC E3), or from the stage whose
    edge a refused visit was on (``--at``, issue 28): as if that stage had answered it."""
    if t.run.status not in RESUMABLE:
        raise reject(t, event, "a person can route only a stopped, failed, escalated or waiting run")
    stage = _route_stage(t, event)
    if not t.graph.has_stage(stage):
        raise reject(t, event, f"stage {stage!r} has no edges to choose from")
    edge = route_verdict(t.graph, stage, event.verdict).edge
    if edge is None or event.verdict.upper() in ("NEEDS_INPUT", "NEEDS_UPSTREAM"):
        raise reject(t, event, f"stage {stage!r} has no edge for {event.verdict!r}; {route_choices(t)}")
    label = next((x for x in t.graph.labels(stage) if x.casefold() == event.verdict.casefold()), event.verdict)
    check_duties(t, event)  # SPEC H6: routing a run on from its gate passes the gate
    at_gate = t.run.status is Status.GATE_WAIT
    close_decision(t, Choice.ROUTE, f"route {label}" + (f" at {stage}" if stage != t.run.stage else ""), event.by)
    _rearm(t)
    t.run.stage = stage
    if not at_gate and gated(t, stage):  # SPEC H1: as if the stage had answered, so its gate opens
        open_gate(t, Routing(edge=edge, verdict=label), t.run.mission_count)
        return
    follow(t, edge, by=event.by or "person")


def gated(t: Transition, stage: str) -> bool:
    """Whether a route past ``stage`` waits at its human gate: from rules 5 a person's route is an answer of the
    stage like an agent's (SPEC H1), so only a gatekeeper's approval passes it, and never the requester's when
    duties are separated (H6); before, the route followed the edge (issue 28: the route skipped the gate)."""
    return t.rules.has(Change.ROUTE_OPENS_GATE) and t.graph.node(stage).human_gate and not t.run.autopilot


def _route_stage(t: Transition, event: RouteChosen) -> str:
    """The stage a route starts from: the one the run stands at, or the source of the refused edge, by name."""
    if event.stage is None or event.stage == t.run.stage:
        return t.run.stage
    refused = refused_hop(t.run)
    decision = open_decision_of(t.run)
    routes = [option for option in decision.options if option.startswith("route ")] if decision else []
    offered = any(option.endswith(f" at {event.stage}") for option in routes)
    if refused is None or event.stage != refused.stage or not offered:  # a stop of rules 3 offered no --at
        raise reject(t, event, f"a route starts at {t.run.stage!r}, where the run stands, not {event.stage!r}; "
                     f"{route_choices(t)}")  # fmt: skip
    return refused.stage


def route_choices(t: Transition) -> str:
    """The routes a person can take, for a refusal to list: the labels of the stage the run stands at, and of the
    refused edge's source."""
    said = f"its labels: {', '.join(t.graph.labels(t.run.stage)) or 'none'}"
    refused = refused_hop(t.run)
    if refused is not None:
        more = ", ".join(t.graph.labels(refused.stage)) or "none"
        said += f"; from {refused.stage!r}, whose edge was refused (`--at {refused.stage}`; in a comment `at "
        said += f"{refused.stage}`): {more}"
    return said


def on_deliver(t: Transition, event: Deliver) -> None:
    if t.run.status not in RESUMABLE:
        raise reject(t, event, "only a stopped, failed, escalated or waiting run can be delivered by hand")
    check_hand_past_gate(t, event)  # SPEC H6: delivering from a gate, or a gated stage, passes it
    close_decision(t, Choice.DELIVER, "deliver", event.by)
    _rearm(t)
    t.add_line(f"delivered by {event.by or 'a person'}")
    reach_end(t)


def _cancel_in_flight(t: Transition) -> None:
    """A mission still awaited when the run ends by a person's hand is recorded as cancelled."""
    if t.run.waiting is not None:
        settle(t, t.run.waiting.seq, status=MissionStatus.CANCELLED)


def on_abandon(t: Transition, event: Abandon) -> None:
    close_decision(t, Choice.ABANDON, "abandon", event.by)
    _cancel_in_flight(t)
    t.run.status = Status.CANCELLED
    t.run.waiting = None
    t.run.stop_requested = False
    abandoned = f"The run was abandoned by {event.by or 'a person'}."
    t.emit(PostMessage(MessageKind.CANCELLED, abandoned), Finish(Status.CANCELLED))


def on_input(t: Transition, event: InputAnswered) -> None:
    require(t, event, Status.AWAITING_INPUT)
    note_person(t, f"Answer from {event.by or 'a person'} at {t.run.stage}", event.text)
    t.run.status = Status.RUNNING
    dispatch(t, MissionKind.AMEND, note="A person answered your questions: see the end of the preamble.")


def on_upstream(t: Transition, event: UpstreamChanged) -> None:
    """The request filed upstream moved on; done or delivered resumes the run by itself (SPEC U3)."""
    require(t, event, Status.AWAITING_UPSTREAM)
    upstream = t.run.upstream
    assert upstream is not None
    state = UpstreamState(event.state)  # its value, however the shell spelled it
    t.run.upstream = upstream.but(state=state, id=event.id or upstream.id)
    unfiled = f"the request {upstream.title!r} was not filed: {event.note}"
    match state:
        case UpstreamState.DONE | UpstreamState.DELIVERED:
            note_person(t, "Upstream", f"The request to {upstream.target} ({upstream.title}) is {state}.")
            if event.summary.strip():  # another repository's words: data for the next mission, never instructions
                t.run.context = add_note(
                    t.run.context, f"upstream outcome ({upstream.target})", event.summary, data=True
                )
            t.run.status = Status.RUNNING
            dispatch(t, MissionKind.DELIVER, note=f"The upstream request to {upstream.target} is {state}: continue.")
        case UpstreamState.REJECTED:
            escalate(t, ReasonCode.UPSTREAM_REJECTED, f"{upstream.target} rejected the request {upstream.title!r}")
        case UpstreamState.REFUSED:  # SPEC U6: a cited finding does not exist
            escalate(t, ReasonCode.CITATION_NOT_FOUND, unfiled)
        case UpstreamState.CYCLE:  # SPEC U3: it would wait on itself
            escalate(t, ReasonCode.UPSTREAM_CYCLE, unfiled)
        case UpstreamState.UNFILEABLE:  # SPEC U3: GitHub refused it for good
            escalate(t, ReasonCode.UPSTREAM_UNFILEABLE, unfiled)
        case UpstreamState.OPEN | UpstreamState.ACCEPTED | UpstreamState.IN_PROGRESS:
            pass  # recorded: the run waits on
        case _:
            assert_never(state)


def on_linked(t: Transition, event: Linked) -> None:
    t.run.links = {**t.run.links, **event.links}


def _close_by_pull(t: Transition, by: str, how: str) -> None:
    """A decision still open when its pull request is merged or closed is closed by that person, then (from
    rules 4: before, it stayed open in the record of an ended run)."""
    if t.rules.has(Change.CLOSED_DECISION):
        close_decision(t, Choice.CLOSED, f"pull request {how}", by)


def on_merged(t: Transition, event: Merged) -> None:
    _close_by_pull(t, event.by, "merged")
    _cancel_in_flight(t)
    t.run.status = Status.DONE
    t.run.stage = END
    t.run.waiting = None
    t.emit(
        PostMessage(MessageKind.DONE, f"The pull request was merged by {event.by or 'a person'}: the run is done."),
        Finish(Status.DONE),
    )


def on_closed(t: Transition, event: Closed) -> None:
    _close_by_pull(t, event.by, "closed without merge")
    _cancel_in_flight(t)
    t.run.status = Status.CANCELLED
    t.run.waiting = None
    t.emit(
        PostMessage(MessageKind.CANCELLED, "The pull request was closed without merge: the run is cancelled."),
        Finish(Status.CANCELLED),
    )
