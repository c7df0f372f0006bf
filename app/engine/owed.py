"""What a saved transition still owes the world (ARCHITECTURE: redelivery reconciles with it).

A shell saves a transition first, then carries out its effects. When it fails in between — GitHub answered
502 to a dispatch — the record is saved and some effects are not done. The redelivered event is already
applied, so ``step`` returns no effect; ``owed_effects`` says instead, from the saved record alone, what
the run's state requires of the world: the job it awaits, the gate's pull request, review request and
message, the ready pull request and the end message, the question, the request filed upstream, the
escalation's decision and the outcome of the decision a person just made, the labels of its end, and the
graph event (and autopilot note) of the hop that brought it where it is. The shell checks each against the
world and carries out those missing, once. Each is built by ``app/engine/state_effects.py``, the code the
transition emitted it with, so what is owed is what was meant.

Everything a transition emits is owed by the record it saved (a property test checks it), except words
the record does not keep: who merged or abandoned a run (the status comment says it), and the one-off note
of a mission's prompt other than a re-ask's (the shell stored the mission's order with the transition). A
finished run owes only its labels (and the outcome of the decision that ended it): its record can no longer
change to say what was done.
Graph events cannot be looked up afterwards, so a shell records the newest hop whose event it sent under
``links[EVENTS_SENT]``; the event of a newer hop is owed.
"""

from __future__ import annotations

from app.engine import effects as fx
from app.engine import state_effects
from app.engine.decision import render_decision
from app.engine.decisions import decided_now, outcome_text
from app.engine.graph.model import PASS, Graph
from app.engine.record import FINAL, MissionKind, ReasonCode, Run, Status, Waiting
from app.engine.verdict import reask_note

EVENTS_SENT = "events_sent"  # links key: the number of the newest hop whose graph event the shell sent


def owed_effects(run: Run, graph: Graph) -> list[fx.Effect]:
    """The effects the saved record ``run`` requires, in the order its transition emitted them."""
    decided = decided_now(run)  # the outcome of a decision the latest transition made (SPEC E3)
    said = [fx.PostMessage(fx.MessageKind.DECIDED, outcome_text(decided))] if decided is not None else []
    if run.status in FINAL:
        return [*said, fx.Finish(run.status)]
    return [*said, *_hop_effects(run, graph), *_state_effects(run, graph)]


def events_sent(run: Run) -> int:
    """The newest hop whose graph event a shell recorded as sent (0: none)."""
    text = run.links.get(EVENTS_SENT, "0")
    return int(text) if text.isdigit() else 0


def _hop_effects(run: Run, graph: Graph) -> list[fx.Effect]:
    """What the newest hop emitted: the autopilot's note when it passed a gate, the node's event on PASS."""
    hop = run.path[-1] if run.path else None
    if hop is None or not graph.has_stage(hop.stage):
        return []
    node = graph.node(hop.stage)
    effects: list[fx.Effect] = []
    if node.human_gate and hop.by == "engine":  # a person's approval names the person; autopilot does not
        said = next((m.verdict for m in reversed(run.missions) if m.stage == hop.stage and m.verdict), None)
        effects.append(state_effects.autopilot_effect(node.stage, said or hop.verdict))
    if node.event and hop.verdict.upper() == PASS and run.hop_count > events_sent(run):
        effects.append(fx.EmitEvent(node.event, node.stage))
    return effects


def _state_effects(run: Run, graph: Graph) -> list[fx.Effect]:
    """What the run's status requires: one table, read top to bottom."""
    status = run.status
    if status is Status.RUNNING and run.waiting is not None:
        return [_awaited(run, graph, run.waiting)]
    if status is Status.GATE_WAIT and run.gate is not None:
        return state_effects.gate_effects(run.gate.stage, run.gate.verdict, run.gate.mission)
    if status is Status.AWAITING_INPUT:
        return [state_effects.question_effect(run.stage, run.questions)]
    if status is Status.AWAITING_UPSTREAM and run.upstream is not None:
        return state_effects.upstream_effects(run)
    if status is Status.AWAITING_MERGE:
        return state_effects.end_effects()
    if status is Status.INTERRUPTED:
        return [state_effects.stopped_effect(run.stage)]
    stopped_by_engine = run.reason is not None and run.reason.code is not ReasonCode.STOPPED
    if status in (Status.FAILED, Status.ESCALATED) and run.reason is not None and stopped_by_engine:
        return [fx.Escalate(run.reason, status, render_decision(run, graph))]
    return []


def _awaited(run: Run, graph: Graph, waiting: Waiting) -> fx.Effect:
    """The call the run waits on: a decision, an advisor's answer, or a mission of its node."""
    labels = graph.labels(waiting.stage)
    if waiting.kind is MissionKind.DECIDE:
        answer = run.context.results[-1].body if run.context.results else ""
        return state_effects.decision_effect(waiting.seq, waiting.stage, labels, answer, waiting.key)
    if waiting.kind is MissionKind.ADVISOR:
        return state_effects.advisor_effect(waiting.seq, waiting.stage, waiting.extra, waiting.key)
    note = reask_note(labels) if waiting.kind is MissionKind.REASK else ""
    return state_effects.mission_effect(run, graph, waiting, note)
