"""How a run moves through its graph: entering nodes, dispatching missions, routing results, gates, stops.

These helpers work on a ``Transition`` (``app/engine/transition.py``): the record being built plus the
effects collected so far.
"""

from __future__ import annotations

from app.engine.basecheck import base_conflict
from app.engine.budget import CATEGORY_OF, add_accepted, add_charge, add_usage, charge_for, refusal
from app.engine.citation import citation_note, cited
from app.engine.context import add_note, cut_utf8
from app.engine.decision import render_decision
from app.engine.decisions import open_decision
from app.engine.effects import (
    AskAdvisor,
    AskDecision,
    DispatchMission,
    EmitEvent,
    Escalate,
    FileRequest,
    Finish,
    MessageKind,
    OpenGate,
    OpenPullRequest,
    PostMessage,
    PromptParts,
    ReadyPullRequest,
)
from app.engine.graph.contract import RESERVED_TEXT, ContractKind, verdict_contract
from app.engine.graph.model import END, NEEDS_INPUT, NEEDS_UPSTREAM, PASS, Edge
from app.engine.messages import (
    END_TEXT,
    advisor_question,
    autopilot_text,
    decision_prompt,
    gate_text,
    question_text,
    stopped_text,
    upstream_text,
)
from app.engine.raises import HeldCall, cut_detail
from app.engine.record import (
    HOP_WINDOW,
    MISSION_WINDOW,
    QUESTIONS_BYTES,
    Gate,
    Hop,
    MissionKind,
    MissionSummary,
    Reason,
    ReasonCode,
    Status,
    Upstream,
    Usage,
    Waiting,
)
from app.engine.transition import Transition
from app.engine.verdict import (
    Routing,
    reask_note,
    request_block,
    route_verdict,
    upstream_allowed,
    without_verdict,
)

RECAP_HOPS = 12
SUPERVISION_END_TEXT = "The supervision run reached the end of its graph: it is done, nothing waits for a merge."
NOT_MISSIONS = (MissionKind.DECIDE, MissionKind.ADVISOR)
UNWORDED = frozenset({ContractKind.SELECTION, ContractKind.CHECK})  # contracts a worker's prompt does not carry
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
    terms = verdict_contract(t.graph, node.stage)
    contract = "" if terms.kind in UNWORDED else terms.text
    parts = PromptParts(
        run_id=run.id,
        stage=node.stage,
        capability=node.capability,
        visit=run.visits.get(node.stage, 0),
        seq=seq,
        kind=kind,
        extra_prompt=node.extra_prompt,
        context_data=t.run.context,
        contract=contract,
        reserved=RESERVED_TEXT,
        note=note,
    )
    key = f"{run.id}/mission/{seq}"
    t.run.waiting = Waiting(seq=seq, kind=kind, stage=node.stage, key=key, session_id=session_id)
    t.run.status = Status.RUNNING
    t.emit(
        DispatchMission(
            seq=seq,
            stage=node.stage,
            capability=node.capability,
            kind=kind,
            prompt=parts,
            key=key,
            check=node.check,
            session_id=session_id,
        )
    )


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


def route_result(t: Transition, waiting: Waiting, verdict: str | None, answer: str) -> None:
    """Act on a finished mission's verdict: reserved verdicts, re-ask, gate, or the edge (SPEC V5, V6, H1)."""
    routing = route_verdict(t.graph, waiting.stage, verdict)
    if routing.reserved == NEEDS_INPUT:
        accept(t, waiting, NEEDS_INPUT)
        t.run.status = Status.AWAITING_INPUT
        t.run.waiting = None
        t.run.questions = questions_of(answer, waiting.seq)
        # the questions as the record keeps them
        t.emit(PostMessage(MessageKind.QUESTION, question_text(waiting.stage, t.run.questions)))
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
        t.emit(PostMessage(MessageKind.AUTOPILOT, autopilot_text(node.stage, routing.verdict or PASS)))
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
        t.emit(EmitEvent(node.event, stage))
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


def open_gate(t: Transition, routing: Routing, seq: int) -> None:
    if t.run.stop_requested:  # a stop asked during the mission wins over the gate: resume re-runs the node
        interrupt(t)
        return
    verdict = routing.verdict or PASS
    t.run.status = Status.GATE_WAIT
    t.run.gate = Gate(stage=t.run.stage, verdict=verdict, opened_at=t.at, mission=seq, head=t.run.head or None)
    t.emit(
        OpenPullRequest(draft=True),
        OpenGate(t.run.stage, verdict, seq),
        PostMessage(MessageKind.GATE, gate_text(t.run.stage, verdict)),
    )


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
    key = f"{t.run.id}/request/{t.run.mission_count}"
    t.run.status = Status.AWAITING_UPSTREAM
    t.run.upstream = Upstream(target=target, title=title, body=body)
    t.emit(
        FileRequest(target, title, body, key),
        PostMessage(MessageKind.UPSTREAM, upstream_text(t.run.stage, target, title)),
    )


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
    prompt = decision_prompt(labels, answer)
    t.run.waiting = Waiting(seq=seq, kind=MissionKind.DECIDE, stage=stage, key=key)
    t.emit(AskDecision(seq, stage, labels, prompt, key))


def ask_advisor(t: Transition, waiting: Waiting, failure: str) -> None:
    """A mission ended badly and an advisor is configured: ask it once (SPEC E4)."""
    seq = charge(t, MissionKind.ADVISOR, t.graph.node(waiting.stage).capability, detail=failure)
    if seq is None:
        return
    key = f"{t.run.id}/advisor/{seq}"
    question = advisor_question(waiting.stage, failure)
    t.run.waiting = Waiting(seq=seq, kind=MissionKind.ADVISOR, stage=waiting.stage, key=key, extra=failure)
    t.emit(AskAdvisor(seq, waiting.stage, question, key))


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
        t.emit(PostMessage(MessageKind.DONE, SUPERVISION_END_TEXT), Finish(Status.DONE))
        return
    t.run.status = Status.AWAITING_MERGE
    t.emit(
        ReadyPullRequest(),
        PostMessage(MessageKind.END, END_TEXT),
    )


def escalate(t: Transition, code: ReasonCode, message: str) -> None:
    """Stop and hand the run to a person with a typed reason and a decision file (SPEC E1, E2)."""
    status = Status.FAILED if code is ReasonCode.MISSION_FAILED else Status.ESCALATED
    reason = Reason(code=code, stage=t.run.stage, message=message)
    t.run.status = status
    t.run.reason = reason
    t.run.waiting = None
    open_decision(t, reason)
    t.emit(Escalate(reason, status, render_decision(t.run, t.graph, t.git)))


def interrupt(t: Transition) -> None:
    reason = Reason(code=ReasonCode.STOPPED, stage=t.run.stage, message="stopped on request")
    t.run.status = Status.INTERRUPTED
    t.run.reason = reason
    t.run.stop_requested = False
    t.emit(PostMessage(MessageKind.STOPPED, stopped_text(t.run.stage)))


def note_person(t: Transition, label: str, text: str) -> None:
    """A person's words enter the preamble, never compacted (SPEC C1, H2, H3)."""
    if text.strip():
        t.run.context = add_note(t.run.context, label, text)
