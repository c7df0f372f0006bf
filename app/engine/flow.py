"""How a run moves through its graph: entering nodes, dispatching missions and calls, charging them, following
edges, reaching the end, escalating and stopping. Where a finished mission's verdict takes the run (reserved
verdicts, re-asks, gates, upstream requests) is ``app/engine/routing.py``.

These helpers work on a ``Transition`` (``app/engine/transition.py``): the record being built plus the
effects collected so far; the effects of the states they enter are built by ``app/engine/state_effects.py``.
"""

from __future__ import annotations

from app.engine import effects as fx
from app.engine import state_effects
from app.engine.basecheck import base_conflict
from app.engine.budget import CATEGORY_OF, add_accepted, add_charge, add_usage, charge_for, refusal
from app.engine.context import add_note
from app.engine.decision import render_decision
from app.engine.decisions import open_decision
from app.engine.graph.model import END, PASS, Edge
from app.engine.raises import HeldCall, cut_detail
from app.engine.record import (
    HOP_WINDOW,
    MISSION_WINDOW,
    Hop,
    MissionKind,
    MissionSummary,
    Reason,
    ReasonCode,
    Status,
    Usage,
    Waiting,
)
from app.engine.transition import Transition

RECAP_HOPS = 12
SUPERVISION_END_TEXT = "The supervision run reached the end of its graph: it is done, nothing waits for a merge."
NOT_MISSIONS = (MissionKind.DECIDE, MissionKind.ADVISOR)
NO_USAGE = Usage()  # what a mission in flight has used, shared: a record is never changed once built


def enter(
    t: Transition,
    stage: str,
    kind: MissionKind = MissionKind.DELIVER,
    *,
    visit: bool = True,
    note: str = "",
    session_id: str | None = None,
) -> None:
    """Enter ``stage``: count the visit (SPEC B1, B2), honour a stop (J4), then dispatch its mission."""
    if stage == END:
        end_checked(t)
        return
    t.run.stage = stage
    t.run.gate = None
    t.run.reasked = False
    if visit:
        visits = t.run.visits.copy()  # dict.copy clones the table; ``{**visits}`` rebuilds it key by key
        visits[stage] = visits.get(stage, 0) + 1
        t.run.visits = visits
        budget = t.graph.node(stage).max_visits
        if visits[stage] > budget:
            escalate(
                t,
                ReasonCode.VISIT_BUDGET_EXHAUSTED,
                f"stage {stage!r} was entered {visits[stage]} times; its budget is {budget} (maxVisits)",
            )
            return
    if t.run.stop_requested:
        interrupt(t)
        return
    dispatch(t, kind, note=note, session_id=session_id)


def dispatch(t: Transition, kind: MissionKind, *, note: str = "", session_id: str | None = None) -> None:
    """Charge the mission before it exists (SPEC P2), record it, and ask the shell to run it."""
    run, node = t.run, t.graph.node(t.run.stage)
    if node.check is not None:
        kind = MissionKind.CHECK
    seq = charge(t, kind, node.capability, detail=note, session_id=session_id)
    if seq is None:
        return
    key = f"{run.id}/mission/{seq}"
    waiting = t.run.waiting = Waiting(seq=seq, kind=kind, stage=node.stage, key=key, session_id=session_id)
    t.run.status = Status.RUNNING
    t.emit(state_effects.mission_effect(run, t.graph, waiting, note))


def charge(
    t: Transition, kind: MissionKind, capability: str, *, detail: str = "", session_id: str | None = None
) -> int | None:
    """Charge a call of ``kind`` and open its mission summary; ``None`` (and the run stopped) if refused. A refused
    call is held with what it carries (``detail``, ``session_id``): a raise of the limit makes it (SPEC P5)."""
    if t.run.stop_requested:  # SPEC J4: checked before every mission and call starts
        interrupt(t)
        return None
    run = t.run
    cost = charge_for(kind, capability, run.policy)
    refused = refusal(run.ledger, run.window, run.policy, cost)
    if refused is not None:
        run.held = HeldCall(
            stage=run.stage, kind=kind, detail=cut_detail(detail), session_id=session_id, limit=refused.limit
        )
        escalate(t, refused.code, f"{refused.message}: the {kind.value} call at {run.stage!r} was not made")
        return None
    run.held = None
    seq = run.mission_count = run.mission_count + 1
    summary = MissionSummary(seq=seq, stage=run.stage, visit=run.visits.get(run.stage, 0), kind=kind, usage=NO_USAGE)
    t.owned[id(summary)] = summary
    missions = t.missions()
    missions.append(summary)
    del missions[:-MISSION_WINDOW]
    add_charge(*t.ledger_line(cost.category), cost)
    return seq


def settle(t: Transition, seq: int, **fields: object) -> None:
    """Update the summary of mission ``seq`` (status, verdict, usage...): the newest first, where it almost
    always is. Its fields are changed as ``Record.set`` does, without packing the keywords a second time."""
    missions = t.missions()
    index = len(missions)
    while index:
        index -= 1
        if missions[index].seq == seq:
            summary = missions[index] = t.own(missions[index])
            summary.__dict__.update(fields)
            return


def spend(t: Transition, kind: MissionKind, usage: Usage, accepted: bool = False) -> None:
    ledger, line = t.ledger_line(CATEGORY_OF[kind])
    add_usage(ledger, line, usage, accepted)


def count_accepted(t: Transition, kind: MissionKind) -> None:
    add_accepted(*t.ledger_line(CATEGORY_OF[kind]))


def follow(t: Transition, edge: Edge, by: str = "engine", commit: str = "") -> None:
    """Follow an edge, emit the node's event on PASS, honour a stop at mission return (SPEC J4).

    A stop wins over the end too: the run waits at ``__end__``, interrupted, its last result accepted; a
    resume then reaches the end without running anything again."""
    stage = t.run.stage
    hop = Hop(stage=stage, verdict=edge.verdict, to=edge.target, visit=t.run.visits.get(stage, 0), by=by, commit=commit)
    path = t.run.path[-(HOP_WINDOW - 1) :]  # the newest hops with room for this one: one list, not two
    path.append(hop)
    t.run.hop_count = t.run.hop_count + 1
    t.run.path = path
    t.run.recap = _recap(t.run.recap, f"{stage}:{edge.verdict}")
    t.add_line(f"VERDICT: {edge.verdict} → {edge.target}")
    node = t.graph.find(stage)
    if node is not None and node.event and edge.verdict.upper() == PASS:
        t.emit(fx.EmitEvent(node.event, stage))
    if t.run.stop_requested:
        t.run.stage = edge.target
        interrupt(t)
        return
    enter(t, edge.target)


def _recap(recap: str, hop: str) -> str:
    """The newest ``RECAP_HOPS`` hops, ``hop`` the last: the oldest cut with one bounded split, not by splitting
    every hop and joining them again."""
    if not recap:
        return hop
    drop = recap.count(" → ") - (RECAP_HOPS - 2)
    return f"{recap.split(' → ', drop)[-1] if drop > 0 else recap} → {hop}"


def ask_decision(t: Transition, waiting: Waiting, answer: str) -> None:
    """A ``decide`` node: a cheap model picks the label from the closed list (SPEC V8)."""
    count_accepted(t, waiting.kind)
    t.run.waiting = None
    decide(t, waiting.stage, answer)


def decide(t: Transition, stage: str, answer: str) -> None:
    """Charge and ask the decision at ``stage`` on the accepted ``answer``."""
    labels = t.graph.labels(stage)
    seq = charge(t, MissionKind.DECIDE, t.graph.node(stage).capability, detail=answer)
    if seq is None:
        return
    key = f"{t.run.id}/decide/{seq}"
    t.run.waiting = Waiting(seq=seq, kind=MissionKind.DECIDE, stage=stage, key=key)
    t.emit(state_effects.decision_effect(seq, stage, labels, answer, key))


def ask_advisor(t: Transition, waiting: Waiting, failure: str) -> None:
    """A mission ended badly and an advisor is configured: ask it once (SPEC E4)."""
    seq = charge(t, MissionKind.ADVISOR, t.graph.node(waiting.stage).capability, detail=failure)
    if seq is None:
        return
    key = f"{t.run.id}/advisor/{seq}"
    t.run.waiting = Waiting(seq=seq, kind=MissionKind.ADVISOR, stage=waiting.stage, key=key, extra=failure)
    t.emit(state_effects.advisor_effect(seq, waiting.stage, failure, key))


def end_checked(t: Transition) -> None:
    """The end once the delivery is checked against its base (SPEC V9, app/engine/basecheck.py); a person's
    ``deliver`` calls ``reach_end`` unchecked: it is their word, given after reading the decision."""
    if (found := base_conflict(t.graph, t.run, t.git)) is None:
        reach_end(t)
    elif found.edge is not None:
        t.add_line(found.message)
        follow(t, found.edge)
    else:
        escalate(t, ReasonCode.BASE_CONFLICT, found.message)


def reach_end(t: Transition) -> None:
    t.run.stage = END
    t.run.gate = None
    t.run.waiting = None
    if t.run.supervision:  # SPEC U6: what it delivers are requests, not code: nothing waits for a merge
        t.run.status = Status.DONE
        t.emit(fx.PostMessage(fx.MessageKind.DONE, SUPERVISION_END_TEXT), fx.Finish(Status.DONE))
        return
    t.run.status = Status.AWAITING_MERGE
    t.emit(*state_effects.end_effects())


def escalate(t: Transition, code: ReasonCode, message: str) -> None:
    """Stop and hand the run to a person with a typed reason and a decision file (SPEC E1, E2)."""
    status = Status.FAILED if code is ReasonCode.MISSION_FAILED else Status.ESCALATED
    reason = Reason(code=code, stage=t.run.stage, message=message)
    t.run.status = status
    t.run.reason = reason
    t.run.waiting = None
    open_decision(t, reason)
    t.emit(fx.Escalate(reason, status, render_decision(t.run, t.graph, t.git)))


def interrupt(t: Transition) -> None:
    reason = Reason(code=ReasonCode.STOPPED, stage=t.run.stage, message="stopped on request")
    t.run.status = Status.INTERRUPTED
    t.run.reason = reason
    t.run.stop_requested = False
    t.emit(state_effects.stopped_effect(t.run.stage))


def note_person(t: Transition, label: str, text: str) -> None:
    """A person's words enter the preamble, never compacted (SPEC C1, H2, H3)."""
    if text.strip():
        t.run.context = add_note(t.run.context, label, text)
