"""The one transition: ``step(run, event, graph) -> (run, effects)``. No I/O, no clock, no randomness.

One handler per event type, looked up in a table, so the order of things is plain to read. Every
handler either returns a new record with its effects or raises a typed ``EventRejected`` and changes
nothing. An event whose idempotency key was already applied is a no-op (SPEC J2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.engine.budget import arm
from app.engine.context import Context, Result, add_note
from app.engine.effects import Effect, Finish, PostMessage
from app.engine.errors import EventRejected, RunFinished, StaleEvent
from app.engine.events import (
    Abandon,
    AdviceReturned,
    Closed,
    DecisionReturned,
    Deliver,
    Event,
    GateAmended,
    GateApproved,
    InputAnswered,
    Linked,
    Merged,
    MissionFinished,
    Resume,
    RouteChosen,
    SessionStarted,
    Start,
    StopRequested,
    UpstreamChanged,
)
from app.engine.flow import (
    NOT_MISSIONS,
    ask_advisor,
    ask_decision,
    dispatch,
    enter,
    escalate,
    follow,
    interrupt,
    note_person,
    reach_end,
    route_result,
    settle,
    spend,
)
from app.engine.graph import END, FAIL, NEEDS_INPUT, NEEDS_UPSTREAM, PASS, Graph
from app.engine.record import (
    AUTOPILOT_GATES,
    FINAL,
    KEY_WINDOW,
    RELAUNCH_WINDOW,
    RESUMABLE,
    Launch,
    MissionKind,
    MissionStatus,
    ReasonCode,
    Request,
    Run,
    Status,
)
from app.engine.transition import Transition
from app.engine.verdict import parse_verdict, route_verdict

Handler = Callable[[Transition, Any], None]


def start_run(event: Start, graph: Graph) -> tuple[Run, list[Effect]]:
    """A new run on ``graph`` for one request: preamble, branch, policy, then the entry node (SPEC C1, P1)."""
    context = add_note(Context(tiers=event.tiers), "request", f"{event.title}\n\n{event.body}".strip(), data=True)
    run = Run(
        id=event.run_id,
        graph=graph.name,
        graph_hash=graph.content_hash(),
        status=Status.RUNNING,
        stage=graph.entry,
        context=context,
        request=Request(title=event.title, body=event.body, origin=event.origin),
        branch=event.branch or f"interlock/{event.run_id}",
        base=event.base,
        policy=event.policy or graph.policy,
        links=dict(event.links),
        autopilot=event.autopilot,
        advisor=event.advisor,
        launch=event.launch,
        applied={event.key: event.at},
        created_at=event.at,
        updated_at=event.at,
        version=1,
    )
    t = Transition(run, graph, event.at, event.git)
    enter(t, graph.entry)
    return t.run, t.effects


def step(run: Run | None, event: Event, graph: Graph) -> tuple[Run, list[Effect]]:
    """Apply one event. ``run`` is ``None`` only for ``Start``."""
    if run is None:
        if not isinstance(event, Start):
            raise EventRejected("?", "none", type(event).__name__, "there is no run yet: only a start creates one")
        return start_run(event, graph)
    if event.key in run.applied:
        return run, []
    name = type(event).__name__
    if run.forgotten_before is not None and event.at < run.forgotten_before:
        raise StaleEvent(
            run.id,
            run.status.value,
            name,
            f"it happened at {event.at:%Y-%m-%d %H:%M:%S}, before the oldest event the run still "
            "remembers: it may have been applied already",
        )
    if run.status in FINAL:
        raise RunFinished(run.id, run.status.value, name, f"the run is {run.status.value}")
    handler = HANDLERS.get(type(event))
    if handler is None:
        raise EventRejected(run.id, run.status.value, name, "this event cannot be applied to an existing run")
    t = Transition(run, graph, event.at, event.git)
    if event.launch is not None:
        _relaunch(t, event.launch)
    handler(t, event)
    if t.run.questions and t.run.status is not Status.AWAITING_INPUT:
        t.run.questions = ""  # answered, resumed, routed or ended: nothing is asked any more
    _remember(t, event)
    t.run.version = run.version + 1
    t.run.updated_at = event.at
    return t.run, t.effects


def _remember(t: Transition, event: Event) -> None:
    """Record the event's key; the oldest keys leave the bounded window (SPEC J2, J5)."""
    applied = {**t.run.applied, event.key: event.at}
    forgotten = t.run.forgotten_before
    while len(applied) > KEY_WINDOW:
        oldest = next(iter(applied))
        dropped = applied.pop(oldest)
        forgotten = dropped if forgotten is None else max(forgotten, dropped)
    t.run.applied = applied
    t.run.forgotten_before = forgotten


def _relaunch(t: Transition, launch: Launch) -> None:
    """A person's command changed how the run goes on (agents, configuration, gates): kept in the record,
    in the same transition as the command's own event; the oldest overrides leave the window (SPEC J5)."""
    t.run.relaunches = [*t.run.relaunches, launch][-RELAUNCH_WINDOW:]
    t.run.autopilot = launch.gates == AUTOPILOT_GATES


def _reject(t: Transition, event: Event, message: str) -> EventRejected:
    return EventRejected(t.run.id, t.run.status.value, type(event).__name__, message)


def _require(t: Transition, event: Event, *statuses: Status) -> None:
    if t.run.status not in statuses:
        wanted = " or ".join(s.value for s in statuses)
        raise _reject(t, event, f"the run must be {wanted}")


def on_mission_finished(t: Transition, event: MissionFinished) -> None:
    waiting = t.run.waiting
    if waiting is None or waiting.seq != event.seq or waiting.kind in NOT_MISSIONS:
        raise StaleEvent(
            t.run.id, t.run.status.value, "MissionFinished", f"the run does not wait for mission {event.seq}"
        )
    settle(
        t,
        event.seq,
        status=event.status,
        agent=event.agent,
        model=event.model,
        duration_s=event.duration_s,
        usage=event.usage,
        session_id=event.session_id or waiting.session_id,
    )
    spend(t, waiting.kind, event.usage)
    if event.status is MissionStatus.SKIPPED:
        t.run.waiting = None
        interrupt(t)
        return
    if event.status is not MissionStatus.DONE:
        _mission_went_wrong(t, event)
        return
    _mission_done(t, event)


def on_session_started(t: Transition, event: SessionStarted) -> None:
    """Remember the session of the mission in flight; its resume passes it back to the agent (SPEC J3)."""
    waiting = t.run.waiting
    if waiting is None or waiting.seq != event.seq or waiting.kind in NOT_MISSIONS:
        raise StaleEvent(
            t.run.id, t.run.status.value, "SessionStarted", f"the run does not wait for mission {event.seq}"
        )
    t.run.waiting = waiting.but(session_id=event.session_id)
    settle(t, event.seq, session_id=event.session_id)


def _mission_done(t: Transition, event: MissionFinished) -> None:
    waiting = t.run.waiting
    assert waiting is not None
    node = t.graph.node(waiting.stage)
    if waiting.kind is MissionKind.CHECK:
        verdict: str | None = PASS if event.exit_code == 0 else FAIL
    else:
        verdict = parse_verdict(event.answer)
    if waiting.kind is MissionKind.REASK:
        t.add_line(f"re-ask answered: VERDICT: {verdict or '(none)'}")
    else:
        result = Result(
            seq=event.seq,
            stage=waiting.stage,
            visit=t.run.visits.get(waiting.stage, 0),
            kind=waiting.kind.value,
            body=event.answer,
        )
        t.add_result(result)
    reserved = (verdict or "").upper() in (NEEDS_INPUT, NEEDS_UPSTREAM)
    if node.requires_changes and event.commits == 0 and waiting.kind is not MissionKind.REASK and not reserved:
        settle(t, event.seq, verdict=verdict)
        t.run.waiting = None
        t.add_line(f"no new commit at {node.stage}: attempt not accepted, stage re-entered")
        enter(t, node.stage)
        return
    if node.decides and waiting.kind is not MissionKind.REASK and not reserved:
        ask_decision(t, waiting, event.answer)
        return
    route_result(t, waiting, verdict, event.answer)


def _mission_went_wrong(t: Transition, event: MissionFinished) -> None:
    """A mission that did not end done: the advisor if there is one, else a person (SPEC E1, E4)."""
    waiting = t.run.waiting
    assert waiting is not None
    tail = event.answer.strip()[-1500:] or f"(no output; exit code {event.exit_code})"
    failure = f"mission #{event.seq} at {waiting.stage!r} ended {event.status.value}: {tail}"
    t.run.waiting = None
    if t.run.advisor:
        ask_advisor(t, waiting, failure)
    else:
        escalate(t, ReasonCode.MISSION_FAILED, failure)


def on_decision(t: Transition, event: DecisionReturned) -> None:
    waiting = t.run.waiting
    if waiting is None or waiting.kind is not MissionKind.DECIDE or waiting.seq != event.seq:
        raise StaleEvent(t.run.id, t.run.status.value, "DecisionReturned", f"no decision #{event.seq} is awaited")
    labels = t.graph.labels(waiting.stage)
    said = parse_verdict(event.answer) or event.answer.strip()
    chosen = next((label for label in labels if label.casefold() == said.casefold()), None)
    settle(t, event.seq, status=MissionStatus.DONE, usage=event.usage, verdict=chosen or said[:80])
    spend(t, MissionKind.DECIDE, event.usage)
    if chosen is None:
        t.run.waiting = None
        escalate(
            t,
            ReasonCode.INVALID_SELECTION,
            f"the decision at {waiting.stage!r} answered {said[:80]!r}, outside {', '.join(labels)}",
        )
        return
    route_result(t, waiting, chosen, event.answer)


def on_advice(t: Transition, event: AdviceReturned) -> None:
    waiting = t.run.waiting
    if waiting is None or waiting.kind is not MissionKind.ADVISOR or waiting.seq != event.seq:
        raise StaleEvent(t.run.id, t.run.status.value, "AdviceReturned", f"no advice #{event.seq} is awaited")
    advice = (event.advice or "").strip().lower()
    settle(t, event.seq, status=event.status, usage=event.usage, verdict=advice or None)
    spend(t, MissionKind.ADVISOR, event.usage, accepted=advice in ("retry", "revise", "escalate"))
    t.run.waiting = None
    if advice == "retry":
        enter(t, waiting.stage, MissionKind.RETRY)
    elif advice == "revise" and event.instruction.strip():
        enter(t, waiting.stage, MissionKind.RETRY, note=f"Advisor's instruction: {event.instruction.strip()}")
    else:
        escalate(t, ReasonCode.MISSION_FAILED, waiting.extra or f"mission at {waiting.stage!r} failed")


def on_gate_approved(t: Transition, event: GateApproved) -> None:
    _require(t, event, Status.GATE_WAIT)
    gate = t.run.gate
    assert gate is not None
    note_person(t, f"Gate approved at {gate.stage} by {event.by or 'a person'}", event.note)
    t.run.status = Status.RUNNING
    t.add_line(f"gate of {gate.stage} approved")
    edge = route_verdict(t.graph, gate.stage, gate.verdict).edge
    assert edge is not None
    follow(t, edge, by=event.by or "gate")


def on_gate_amended(t: Transition, event: GateAmended) -> None:
    _require(t, event, Status.GATE_WAIT)
    gate = t.run.gate
    assert gate is not None
    note_person(t, f"Amendment at {gate.stage} by {event.by or 'a person'}", event.note)
    t.run.gate = None
    t.run.status = Status.RUNNING
    t.add_line(f"gate of {gate.stage}: changes requested")
    dispatch(t, MissionKind.AMEND, note=event.note)


def on_stop(t: Transition, event: StopRequested) -> None:
    """Mark the stop; it takes effect before the next mission or when the running one returns (SPEC J4)."""
    if t.run.status in (Status.INTERRUPTED, Status.FAILED, Status.ESCALATED):
        return  # already stopped: the reason it stopped for is kept
    if t.run.status is Status.AWAITING_MERGE:
        raise _reject(t, event, "the run is finished and waits for a person to merge; close the pull request instead")
    if t.run.status is Status.RUNNING and t.run.waiting is not None:
        t.run.stop_requested = True
        return
    interrupt(t)


def on_resume(t: Transition, event: Resume) -> None:
    """Re-enter with budgets re-armed (SPEC B4, J3); an interrupted mission resumes first, in its own session."""
    crashed = t.run.status is Status.RUNNING and t.run.waiting is not None
    if t.run.status not in RESUMABLE and not crashed:
        raise _reject(t, event, "only a stopped, failed, escalated or waiting run can be resumed")
    if event.stage is not None and not t.graph.has_stage(event.stage):
        raise _reject(t, event, f"graph {t.graph.name!r} has no stage {event.stage!r}")
    waiting = t.run.waiting
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
    """A person routes on a verdict of their choice from the current stage (SPEC E3)."""
    if t.run.status not in RESUMABLE:
        raise _reject(t, event, "a person can route only a stopped, failed, escalated or waiting run")
    if not t.graph.has_stage(t.run.stage):
        raise _reject(t, event, f"stage {t.run.stage!r} has no edges to choose from")
    edge = route_verdict(t.graph, t.run.stage, event.verdict).edge
    if edge is None or event.verdict.upper() in ("NEEDS_INPUT", "NEEDS_UPSTREAM"):
        labels = ", ".join(t.graph.labels(t.run.stage)) or "none"
        raise _reject(t, event, f"stage {t.run.stage!r} has no edge for {event.verdict!r}; its labels: {labels}")
    _rearm(t)
    follow(t, edge, by=event.by or "person")


def on_deliver(t: Transition, event: Deliver) -> None:
    if t.run.status not in RESUMABLE:
        raise _reject(t, event, "only a stopped, failed, escalated or waiting run can be delivered by hand")
    _rearm(t)
    t.add_line(f"delivered by {event.by or 'a person'}")
    reach_end(t)


def _cancel_in_flight(t: Transition) -> None:
    """A mission still awaited when the run ends by a person's hand is recorded as cancelled."""
    if t.run.waiting is not None:
        settle(t, t.run.waiting.seq, status=MissionStatus.CANCELLED)


def on_abandon(t: Transition, event: Abandon) -> None:
    _cancel_in_flight(t)
    t.run.status = Status.CANCELLED
    t.run.waiting = None
    t.run.stop_requested = False
    t.emit(PostMessage("cancelled", f"The run was abandoned by {event.by or 'a person'}."), Finish(Status.CANCELLED))


def on_input(t: Transition, event: InputAnswered) -> None:
    _require(t, event, Status.AWAITING_INPUT)
    note_person(t, f"Answer from {event.by or 'a person'} at {t.run.stage}", event.text)
    t.run.status = Status.RUNNING
    dispatch(t, MissionKind.AMEND, note="A person answered your questions: see the end of the preamble.")


def on_upstream(t: Transition, event: UpstreamChanged) -> None:
    """The request filed upstream moved on; done or delivered resumes the run by itself (SPEC U3)."""
    _require(t, event, Status.AWAITING_UPSTREAM)
    upstream = t.run.upstream
    assert upstream is not None
    state = event.state.lower()
    t.run.upstream = upstream.but(state=state, id=event.id or upstream.id)
    if state in ("done", "delivered"):
        note_person(t, "Upstream", f"The request to {upstream.target} ({upstream.title}) is {state}.")
        t.run.status = Status.RUNNING
        dispatch(t, MissionKind.DELIVER, note=f"The upstream request to {upstream.target} is {state}: continue.")
    elif state == "rejected":
        escalate(t, ReasonCode.UPSTREAM_REJECTED, f"{upstream.target} rejected the request {upstream.title!r}")


def on_linked(t: Transition, event: Linked) -> None:
    t.run.links = {**t.run.links, **event.links}


def on_merged(t: Transition, event: Merged) -> None:
    _cancel_in_flight(t)
    t.run.status = Status.DONE
    t.run.stage = END
    t.run.waiting = None
    t.emit(
        PostMessage("done", f"The pull request was merged by {event.by or 'a person'}: the run is done."),
        Finish(Status.DONE),
    )


def on_closed(t: Transition, event: Closed) -> None:
    _cancel_in_flight(t)
    t.run.status = Status.CANCELLED
    t.run.waiting = None
    t.emit(
        PostMessage("cancelled", "The pull request was closed without merge: the run is cancelled."),
        Finish(Status.CANCELLED),
    )


HANDLERS: dict[type[Event], Handler] = {
    MissionFinished: on_mission_finished,
    SessionStarted: on_session_started,
    DecisionReturned: on_decision,
    AdviceReturned: on_advice,
    GateApproved: on_gate_approved,
    GateAmended: on_gate_amended,
    StopRequested: on_stop,
    Resume: on_resume,
    RouteChosen: on_route,
    Deliver: on_deliver,
    Abandon: on_abandon,
    InputAnswered: on_input,
    UpstreamChanged: on_upstream,
    Linked: on_linked,
    Merged: on_merged,
    Closed: on_closed,
}
