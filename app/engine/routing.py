"""Where a finished mission's verdict takes the run: a reserved verdict (a question for a person, a request
upstream), one re-ask of an unroutable answer, a human gate (or autopilot past it), or the edge (SPEC V5, V6,
H1, U6). Kept apart from ``app/engine/flow.py``, which moves the run once the way is chosen.
"""

from __future__ import annotations

from app.engine import state_effects
from app.engine.citation import citation_note, cited
from app.engine.context import cut_utf8
from app.engine.flow import count_accepted, dispatch, escalate, follow, interrupt, settle
from app.engine.graph.model import NEEDS_INPUT, NEEDS_UPSTREAM, PASS
from app.engine.record import QUESTIONS_BYTES, Gate, MissionKind, ReasonCode, Status, Upstream, Waiting
from app.engine.transition import Transition
from app.engine.verdict import (
    Routing,
    reask_note,
    request_block,
    route_verdict,
    upstream_allowed,
    without_verdict,
)


def route_result(t: Transition, waiting: Waiting, verdict: str | None, answer: str) -> None:
    """Act on a finished mission's verdict: reserved verdicts, re-ask, gate, or the edge (SPEC V5, V6, H1)."""
    routing = route_verdict(t.graph, waiting.stage, verdict)
    if routing.reserved == NEEDS_INPUT:
        accept(t, waiting, NEEDS_INPUT)
        t.run.status = Status.AWAITING_INPUT
        t.run.waiting = None
        t.run.questions = questions_of(answer, waiting.seq)
        # the questions as the record keeps them
        t.emit(state_effects.question_effect(waiting.stage, t.run.questions))
        return
    if routing.reserved == NEEDS_UPSTREAM and request_block(answer) is not None:
        if t.run.supervision and uncited(t, waiting, answer):
            return
        accept(t, waiting, NEEDS_UPSTREAM)
        file_upstream(t, answer)
        return
    if routing.edge is None:
        reask_or_escalate(t, waiting, verdict)
        return
    accept(t, waiting, routing.verdict or PASS)
    node = t.graph.node(waiting.stage)
    if node.human_gate and not t.run.autopilot:
        open_gate(t, routing, waiting.seq)
        return
    if node.human_gate:
        t.emit(state_effects.autopilot_effect(node.stage, routing.verdict or PASS))
        t.add_line(f"gate of {node.stage} passed by autopilot")
    follow(t, routing.edge)


def uncited(t: Transition, waiting: Waiting, answer: str) -> bool:
    """SPEC U6: a supervision run's request that cites no finding in a checkable form is not filed. It is asked
    again once (costing no visit, like a malformed verdict); asked twice, the run escalates. Whether it was
    refused."""
    block = request_block(answer)
    problem = cited(block[2]).problem() if block is not None else None
    if problem is None:
        return False
    settle(t, waiting.seq, verdict=NEEDS_UPSTREAM)
    if t.run.reasked:
        message = f"stage {waiting.stage!r} asked twice to file a request that {problem}; nothing was filed"
        escalate(t, ReasonCode.CITATION_MISSING, message)
        return True
    t.run.waiting = None
    dispatch(t, MissionKind.REASK, note=citation_note(problem))
    t.run.reasked = True
    return True


def questions_of(answer: str, seq: int) -> str:
    """What a NEEDS_INPUT answer asks, kept in the record so every view can show it in full (SPEC V6);
    bounded (J5): a longer answer is cut, and the whole of it stays in its mission record (C5)."""
    text = without_verdict(answer) or "(the answer asked for input but wrote no question)"
    raw = text.encode("utf-8")
    if len(raw) <= QUESTIONS_BYTES:
        return text
    return cut_utf8(raw, QUESTIONS_BYTES) + f"\n[… cut by Interlock: the full text is in mission record #{seq} …]"


def accept(t: Transition, waiting: Waiting, verdict: str) -> None:
    settle(t, waiting.seq, verdict=verdict)
    count_accepted(t, waiting.kind)
    t.run.waiting = None
    t.run.reasked = False


def reask_or_escalate(t: Transition, waiting: Waiting, verdict: str | None) -> None:
    """One re-ask, costing no visit (SPEC V5, B3); still unroutable, the run escalates (E1)."""
    settle(t, waiting.seq, verdict=verdict)
    labels = t.graph.labels(waiting.stage)
    if t.run.reasked:
        shown = f"{verdict!r}" if verdict else "no verdict"
        escalate(
            t,
            ReasonCode.UNROUTABLE_VERDICT,
            f"stage {waiting.stage!r} answered {shown} twice; it can route {', '.join(labels) or 'nothing'}",
        )
        return
    t.run.waiting = None
    dispatch(t, MissionKind.REASK, note=reask_note(labels))
    t.run.reasked = True


def open_gate(t: Transition, routing: Routing, seq: int) -> None:
    if t.run.stop_requested:  # a stop asked during the mission wins over the gate: resume re-runs the node
        interrupt(t)
        return
    verdict = routing.verdict or PASS
    t.run.status = Status.GATE_WAIT
    t.run.gate = Gate(stage=t.run.stage, verdict=verdict, opened_at=t.at, mission=seq, head=t.run.head or None)
    t.emit(*state_effects.gate_effects(t.run.stage, verdict, seq))


def file_upstream(t: Transition, answer: str) -> None:
    block = request_block(answer)
    assert block is not None
    target, title, body = block
    if not upstream_allowed(target, t.run.upstream_allowed):
        allowed = ", ".join(t.run.upstream_allowed) or "none"
        escalate(
            t,
            ReasonCode.UPSTREAM_NOT_ALLOWED,
            f"stage {t.run.stage!r} asked to file a request in {target[:100]!r}, which the configuration does not "
            f"allow (`upstream:` lists {allowed}); nothing was filed",
        )
        return
    t.run.status = Status.AWAITING_UPSTREAM
    t.run.upstream = Upstream(target=target, title=title, body=body)
    t.emit(*state_effects.upstream_effects(t.run))
