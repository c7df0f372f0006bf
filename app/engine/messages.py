"""The words of the effects a transition emits, in one place: ``state_effects`` puts them in the effects that
``flow`` and ``routing`` emit and that ``owed`` builds again from a saved record, so a shell that carries out
an owed effect posts exactly what was meant."""

from __future__ import annotations

from app.engine.context import fence
from app.engine.graph.contract import selection_text
from app.engine.graph.model import END
from app.engine.record import Advice

END_TEXT = "The run reached the end: the pull request is ready for review and waits for a person to merge it."


def question_text(stage: str, answer: str) -> str:
    return f"Stage `{stage}` needs an answer from a person:\n\n{answer}"


def upstream_text(stage: str, target: str, title: str) -> str:
    return f"Stage `{stage}` needs `{target}` to change first: {title}"


def gate_text(stage: str, verdict: str) -> str:
    return (
        f"Stage `{stage}` finished with {verdict} and waits at a human gate: approve the "
        "pull request to go on, or request changes to amend it."
    )


def autopilot_text(stage: str, verdict: str) -> str:
    return f"Autopilot passed the gate of `{stage}` on {verdict}."


def stopped_text(stage: str) -> str:
    if stage == END:
        return "The run was stopped before its end, its last result accepted; resuming it goes to the end."
    return f"The run was stopped at `{stage}`; it can be resumed as it is."


def decision_prompt(labels: tuple[str, ...], answer: str) -> str:
    return f"{selection_text(labels)}\n\n## Result to classify\n{fence(answer)}"


def advisor_question(stage: str, failure: str) -> str:
    return (
        f"The mission at stage `{stage}` ended badly:\n{fence(failure)}\n"
        f"Answer with one word — {Advice.RETRY}, {Advice.REVISE} or {Advice.ESCALATE} — and for {Advice.REVISE}, "
        "an instruction on the next lines."
    )
