"""The one transition: ``step(run, event, graph) -> (run, effects)``. No I/O, no clock, no randomness.

One handler per event type, looked up in a table, so the order of things is plain to read. Every
handler either returns a new record with its effects or raises a typed ``EventRejected`` and changes
nothing. An event whose idempotency key was already applied is a no-op (SPEC J2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_never

from app.engine import rules as engine_rules
from app.engine.basecheck import remember_git
from app.engine.budget_raise import on_budget_raised
from app.engine.context import Context, Result, add_note
from app.engine.effects import Effect
from app.engine.errors import EventRejected, RunFinished, StaleEvent
from app.engine.events import (
    Abandon,
    AdviceReturned,
    BudgetRaised,
    Closed,
    DecisionReturned,
    Deliver,
    Event,
    GateAmended,
    GateApproved,
    GraphMismatched,
    GraphUpgraded,
    InputAnswered,
    Linked,
    Merged,
    MissionFinished,
    Resume,
    RouteChosen,
    SessionStarted,
    Start,
    StopRequested,
    StopWithdrawn,
    UpstreamChanged,
)
from app.engine.flow import (
    NOT_MISSIONS,
    ask_advisor,
    ask_decision,
    enter,
    escalate,
    interrupt,
    settle,
    spend,
)
from app.engine.graph.model import FAIL, NEEDS_INPUT, NEEDS_UPSTREAM, PASS, Graph
from app.engine.people import (
    on_abandon,
    on_closed,
    on_deliver,
    on_gate_amended,
    on_gate_approved,
    on_input,
    on_linked,
    on_merged,
    on_resume,
    on_route,
    on_stop,
    on_stop_withdrawn,
    on_upstream,
)
from app.engine.pinning import on_graph_mismatch, on_graph_upgraded
from app.engine.record import (
    FINAL,
    KEY_WINDOW,
    RELAUNCH_WINDOW,
    Advice,
    GateMode,
    Launch,
    MissionKind,
    MissionStatus,
    ReasonCode,
    Request,
    Run,
    Status,
    Waiting,
)
from app.engine.routing import route_result
from app.engine.rules import Change, Rules
from app.engine.selection import invalid_selection_reason, select_label
from app.engine.transition import Transition
from app.engine.verdict import parse_verdict

Handler = Callable[[Transition, Any], None]
# The members every mission's return compares with, as globals: Python 3.11 reads an enum member through its
# class several times slower than a global (the enum's metaclass keeps the read from being specialised).
_DONE, _SKIPPED, _CHECK, _REASK = MissionStatus.DONE, MissionStatus.SKIPPED, MissionKind.CHECK, MissionKind.REASK


def start_run(event: Start, graph: Graph, rules: Rules) -> tuple[Run, list[Effect]]:
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
        team=event.team,
        supervision=event.supervision,
        satellites=list(event.satellites),
        requested_by=event.by or (event.launch.by if event.launch else ""),  # SPEC H6
        separate_duties=event.separate_duties,
        upstream_allowed=list(event.upstream),
        launch=event.launch,
        applied={event.key: event.at},
        created_at=event.at,
        updated_at=event.at,
        version=1,
        rules=rules.stamp,
    )
    t = Transition(run, graph, event.at, event.git, rules)
    enter(t, graph.entry)
    return t.finish()


def step(run: Run | None, event: Event, graph: Graph, rules: Rules | None = None) -> tuple[Run, list[Effect]]:
    """Apply one event. ``run`` is ``None`` only for ``Start``. ``rules``: the engine rules to apply it under,
    recorded in the record (SPEC J6); by default this engine's, an older version only to replay a journal."""
    rules = rules or engine_rules.CURRENT
    if run is None:
        if not isinstance(event, Start):
            raise EventRejected("?", "none", type(event).__name__, "there is no run yet: only a start creates one")
        return start_run(event, graph, rules)
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
    t = Transition(run, graph, event.at, event.git, rules)
    t.run.rules = rules.stamp
    if event.git is not None:  # the branch head a gate opens on (SPEC H5), what its merge conflicts in (V9)
        remember_git(t.run, event.git)
    if event.launch is not None:
        _relaunch(t, event.launch)
    handler(t, event)
    if t.run.questions and t.run.status is not Status.AWAITING_INPUT:
        t.run.questions = ""  # answered, resumed, routed or ended: nothing is asked any more
    _remember(t, event)
    t.run.version = run.version + 1
    t.run.updated_at = event.at
    return t.finish()


def _remember(t: Transition, event: Event) -> None:
    """Record the event's key; the oldest keys leave the bounded window (SPEC J2, J5). ``dict.copy`` clones the
    window's table in one go, several times faster than rebuilding it key by key as ``{**applied}`` does."""
    applied = t.run.applied.copy()
    applied[event.key] = event.at
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
    t.run.autopilot = launch.gates == GateMode.APPROVE


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
    if event.status is _SKIPPED:
        t.run.waiting = None
        interrupt(t)
        return
    if event.status is not _DONE:
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
    if waiting.kind is _CHECK:
        verdict: str | None = PASS if event.exit_code == 0 else FAIL
    else:
        verdict = parse_verdict(event.answer)
    if waiting.kind is _REASK:
        t.add_line(f"re-ask answered: VERDICT: {verdict or '(none)'}")
    else:
        result = Result(
            seq=event.seq,
            stage=waiting.stage,
            visit=t.run.visits.get(waiting.stage, 0),
            kind=waiting.kind,
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
    if not t.rules.has(Change.LABEL_OR_NONE):
        _decided_before_labels(t, event, waiting)
        return
    chosen = select_label(event.answer, labels)  # SPEC V8: a label of the list or nothing, never the answer's prose
    settle(t, event.seq, status=MissionStatus.DONE, usage=event.usage, verdict=chosen.label)
    spend(t, MissionKind.DECIDE, event.usage)
    if chosen.label is None:
        t.run.waiting = None
        reason = invalid_selection_reason(waiting.stage, event.seq, labels, chosen, event.answer)
        escalate(t, ReasonCode.INVALID_SELECTION, reason)
        return
    route_result(t, waiting, chosen.label, event.answer)


def _decided_before_labels(t: Transition, event: DecisionReturned, waiting: Waiting) -> None:
    """The rule before issue 17 (rules 1 and 2, app/engine/rules.py), kept to replay journals made under it: the
    last verdict line's label or else the whole answer, matched to a label in any case; the summary kept what
    was said (cut) when it matched none."""
    labels = t.graph.labels(waiting.stage)
    said = parse_verdict(event.answer) or event.answer.strip()
    chosen = next((label for label in labels if label.casefold() == said.casefold()), None)
    settle(t, event.seq, status=MissionStatus.DONE, usage=event.usage, verdict=chosen or said[:80])
    spend(t, MissionKind.DECIDE, event.usage)
    if chosen is None:
        t.run.waiting = None
        reason = f"the decision at {waiting.stage!r} answered {said[:80]!r}, outside {', '.join(labels)}"
        escalate(t, ReasonCode.INVALID_SELECTION, reason)
        return
    route_result(t, waiting, chosen, event.answer)


def on_advice(t: Transition, event: AdviceReturned) -> None:
    waiting = t.run.waiting
    if waiting is None or waiting.kind is not MissionKind.ADVISOR or waiting.seq != event.seq:
        raise StaleEvent(t.run.id, t.run.status.value, "AdviceReturned", f"no advice #{event.seq} is awaited")
    said = (event.advice or "").strip().lower()  # a word a shell passed unparsed is kept, and is no advice
    advice = Advice.named(said)
    settle(t, event.seq, status=event.status, usage=event.usage, verdict=said or None)
    spend(t, MissionKind.ADVISOR, event.usage, accepted=advice is not None)
    t.run.waiting = None
    match advice:
        case Advice.RETRY:
            enter(t, waiting.stage, MissionKind.RETRY)
        case Advice.REVISE if event.instruction.strip():
            enter(t, waiting.stage, MissionKind.RETRY, note=f"Advisor's instruction: {event.instruction.strip()}")
        case Advice.REVISE | Advice.ESCALATE | None:  # a revise without an instruction is no way forward
            escalate(t, ReasonCode.MISSION_FAILED, waiting.extra or f"mission at {waiting.stage!r} failed")
        case _:
            assert_never(advice)


HANDLERS: dict[type[Event], Handler] = {
    MissionFinished: on_mission_finished,
    SessionStarted: on_session_started,
    DecisionReturned: on_decision,
    AdviceReturned: on_advice,
    GateApproved: on_gate_approved,
    GateAmended: on_gate_amended,
    StopRequested: on_stop,
    StopWithdrawn: on_stop_withdrawn,
    Resume: on_resume,
    RouteChosen: on_route,
    Deliver: on_deliver,
    Abandon: on_abandon,
    InputAnswered: on_input,
    UpstreamChanged: on_upstream,
    Linked: on_linked,
    Merged: on_merged,
    Closed: on_closed,
    BudgetRaised: on_budget_raised,
    GraphMismatched: on_graph_mismatch,  # SPEC J7
    GraphUpgraded: on_graph_upgraded,
}
