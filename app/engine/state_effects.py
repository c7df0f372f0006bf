"""The effects a run's state asks of the world, each built by one function: the mission or call it waits on,
the gate's pull request and message, the question, the request filed upstream, the ready delivery.

Two places need them: a transition emits them as it enters the state (``app/engine/flow.py``,
``app/engine/routing.py``), and ``app/engine/owed.py`` builds them again from the saved record when a shell
failed to carry them out. Built by the same code, what is owed is exactly what was meant (a property test
checks it).
"""

from __future__ import annotations

from app.engine import effects as fx
from app.engine.graph.contract import RESERVED_TEXT, ContractKind, verdict_contract
from app.engine.graph.model import Graph
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
from app.engine.record import Run, Waiting

UNWORDED = frozenset({ContractKind.SELECTION, ContractKind.CHECK})  # contracts a worker's prompt does not carry


def mission_effect(run: Run, graph: Graph, waiting: Waiting, note: str = "") -> fx.DispatchMission:
    """The mission ``waiting`` names, of its node: its prompt's parts (the context travels as data, rendered only
    when a shell builds the prompt) and the check it runs instead of an agent, if the node has one."""
    node = graph.node(waiting.stage)
    terms = verdict_contract(graph, node.stage)
    parts = fx.PromptParts(
        run_id=run.id,
        stage=node.stage,
        capability=node.capability,
        visit=run.visits.get(node.stage, 0),
        seq=waiting.seq,
        kind=waiting.kind,
        extra_prompt=node.extra_prompt,
        context_data=run.context,
        contract="" if terms.kind in UNWORDED else terms.text,
        reserved=RESERVED_TEXT,
        note=note,
    )
    return fx.DispatchMission(
        seq=waiting.seq,
        stage=node.stage,
        capability=node.capability,
        kind=waiting.kind,
        prompt=parts,
        key=waiting.key,
        check=node.check,
        session_id=waiting.session_id,
    )


def decision_effect(seq: int, stage: str, labels: tuple[str, ...], answer: str, key: str) -> fx.AskDecision:
    """The cheap model's call that picks a label of ``labels`` on the accepted ``answer`` (SPEC V8)."""
    return fx.AskDecision(seq, stage, labels, decision_prompt(labels, answer), key)


def advisor_effect(seq: int, stage: str, failure: str, key: str) -> fx.AskAdvisor:
    """The advisor's one call on a mission that ended badly (SPEC E4)."""
    return fx.AskAdvisor(seq, stage, advisor_question(stage, failure), key)


def gate_effects(stage: str, verdict: str, mission: int) -> list[fx.Effect]:
    """A gate opened at ``stage``: the draft pull request to review, the gate itself, and its message."""
    return [
        fx.OpenPullRequest(draft=True),
        fx.OpenGate(stage, verdict, mission),
        fx.PostMessage(fx.MessageKind.GATE, gate_text(stage, verdict)),
    ]


def autopilot_effect(stage: str, verdict: str) -> fx.PostMessage:
    return fx.PostMessage(fx.MessageKind.AUTOPILOT, autopilot_text(stage, verdict))


def question_effect(stage: str, questions: str) -> fx.PostMessage:
    return fx.PostMessage(fx.MessageKind.QUESTION, question_text(stage, questions))


def upstream_effects(run: Run) -> list[fx.Effect]:
    """The request ``run.upstream`` filed (keyed by the mission that asked it, so it is filed once), and its
    message."""
    assert run.upstream is not None
    up, key = run.upstream, f"{run.id}/request/{run.mission_count}"
    return [
        fx.FileRequest(up.target, up.title, up.body, key),
        fx.PostMessage(fx.MessageKind.UPSTREAM, upstream_text(run.stage, up.target, up.title)),
    ]


def end_effects() -> list[fx.Effect]:
    """The delivery is ready: its pull request out of draft, and the end message."""
    return [fx.ReadyPullRequest(), fx.PostMessage(fx.MessageKind.END, END_TEXT)]


def stopped_effect(stage: str) -> fx.PostMessage:
    return fx.PostMessage(fx.MessageKind.STOPPED, stopped_text(stage))
