"""The verdict contract a node's missions receive, derived from its outgoing edges (SPEC V1–V4, V8).

A worker is told only the verdicts its node can route, so it cannot invent a route; and it is told
nothing at all where nothing needs deciding, so a one-way step costs no extra words.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.engine.graph.model import NEEDS_INPUT, NEEDS_UPSTREAM, PASS, Graph


class ContractKind(StrEnum):
    NONE = "none"  # V2: no label but PASS (or no edge): a missing verdict is PASS
    DEFAULT_PASS = "default-pass"  # V3: several labels with PASS: listed, PASS when missing
    STRICT = "strict"  # V4: no PASS label: a verdict line is required
    CHECK = "check"  # V7: the exit code of a command is the verdict
    SELECTION = "selection"  # V8: a decision model picks one label from a closed list


@dataclass(frozen=True)
class Contract:
    kind: ContractKind
    labels: tuple[str, ...]
    text: str

    @property
    def verdict_required(self) -> bool:
        return self.kind in (ContractKind.STRICT, ContractKind.SELECTION)


def verdict_contract(graph: Graph, stage: str) -> Contract:
    """The contract of ``stage``'s missions. ``KeyError`` when the graph has no such stage. Kept per graph, in one
    table of its stages, so that a dispatch builds no key and no closure to find it."""
    contracts: dict[str, Contract] = graph.memo("contracts", dict)
    found = contracts.get(stage)
    if found is None:
        found = contracts[stage] = _contract(graph, stage)
    return found


def _contract(graph: Graph, stage: str) -> Contract:
    node = graph.node(stage)
    labels = graph.labels(stage)
    if node.check is not None:
        return Contract(ContractKind.CHECK, labels, "")
    if node.decides:
        return Contract(ContractKind.SELECTION, labels, selection_text(labels))
    has_pass = any(label.casefold() == PASS.casefold() for label in labels)
    if not labels or (has_pass and len(labels) == 1):
        return Contract(ContractKind.NONE, labels, "")
    if has_pass:
        return Contract(ContractKind.DEFAULT_PASS, labels, _default_pass_text(labels))
    return Contract(ContractKind.STRICT, labels, _strict_text(labels))


def _default_pass_text(labels: tuple[str, ...]) -> str:
    return (
        "## Verdict\n"
        "End your answer with one line of the form `VERDICT: <label>`, where <label> is one of: "
        f"{', '.join(labels)}.\n"
        f"If your answer has no verdict line, it is read as {PASS}."
    )


def _strict_text(labels: tuple[str, ...]) -> str:
    return (
        "## Verdict (required)\n"
        "End your answer with one line of the form `VERDICT: <label>`, where <label> is exactly one of: "
        f"{', '.join(labels)}.\n"
        "This line is required: an answer without it cannot be used and will be sent back to you."
    )


def selection_text(labels: tuple[str, ...]) -> str:
    """What the decision model of a ``decide`` node is asked (SPEC V8)."""
    return (
        "## Decision\n"
        f"Read the result above and choose exactly one label from this closed list: {', '.join(labels)}.\n"
        "Answer with one line `VERDICT: <label>` and nothing else. Any other label stops the run."
    )


def reserved_verdicts_text() -> str:
    """The two verdicts every role may use at any node (SPEC V6); every role prompt carries this."""
    return RESERVED_TEXT


RESERVED_TEXT = (
    "## When you cannot go on\n"
    f"- `VERDICT: {NEEDS_INPUT}` — you need a person's answer. Put your questions in the answer; the run "
    "waits until someone answers.\n"
    f"- `VERDICT: {NEEDS_UPSTREAM}` — another repository must change first. Put the feature request in a "
    "fenced block (```request ... ```) with its target repository on the first line; Interlock files it "
    "for you. Never file it yourself."
)
