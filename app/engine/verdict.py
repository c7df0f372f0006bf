"""Reading a verdict from an answer and routing on it (SPEC V5, V6).

The verdict is the *last* line of the form ``VERDICT: label`` — a worker may quote the contract or
change its mind earlier in its answer; what it ends with counts. Routing is a function of (node, label):
the edge with that label (any case), else the catch-all, else nothing — and "nothing" is never guessed.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from app.engine.contract import ContractKind, verdict_contract
from app.engine.graph import CATCH_ALL, END, NEEDS_INPUT, NEEDS_UPSTREAM, PASS, Edge, Graph

_VERDICT_LINE = re.compile(
    r"^[\s>*_`~#-]*verdict[\s*_`~]*:[\s*_`~]*(?P<label>[^\s*_`~][^*`~]*?)[\s*_`~.]*$", re.IGNORECASE
)
_REQUEST_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[ \t]*request[ \t]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.MULTILINE | re.DOTALL
)


def parse_verdict(answer: str) -> str | None:
    """The label of the last ``VERDICT: label`` line, emphasis and backticks ignored; ``None`` if none."""
    for line in reversed(answer.splitlines()):
        match = _VERDICT_LINE.match(line)
        if match and match.group("label").strip():
            return match.group("label").strip()
    return None


def without_verdict(answer: str) -> str:
    """The answer without the verdict line that counts (the last one): what is left for a person to read."""
    lines = answer.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        match = _VERDICT_LINE.match(lines[index])
        if match and match.group("label").strip():
            del lines[index]
            break
    return "\n".join(lines).strip()


class Routing(NamedTuple):
    """Where a verdict leads: an edge, a reserved verdict, or nowhere (unroutable)."""

    verdict: str | None
    edge: Edge | None = None
    reserved: str | None = None

    @property
    def routable(self) -> bool:
        return self.edge is not None or self.reserved is not None


def route_verdict(graph: Graph, stage: str, verdict: str | None) -> Routing:
    """Follow SPEC V5: exact label (any case), else ``*``, else unroutable. A missing verdict is PASS
    unless the node's contract is strict (V2–V4)."""
    if verdict is not None and verdict.upper() in (NEEDS_INPUT, NEEDS_UPSTREAM):
        return Routing(verdict.upper(), reserved=verdict.upper())
    edges = graph.outgoing(stage)
    if verdict is None:
        if verdict_contract(graph, stage).kind in (ContractKind.STRICT, ContractKind.SELECTION):
            return Routing(None)
        verdict = PASS
    if not edges:  # a node without outgoing edges is a termination: whatever it says, the run ends
        return Routing(verdict, Edge.model_construct(source=stage, verdict=verdict, target=END))
    wanted = verdict.casefold()
    for edge in edges:
        if edge.verdict != CATCH_ALL and edge.verdict.casefold() == wanted:
            return Routing(edge.verdict, edge)
    catch_all = next((edge for edge in edges if edge.verdict == CATCH_ALL), None)
    return Routing(verdict, catch_all)


def request_block(answer: str) -> tuple[str, str, str] | None:
    """The feature request of a NEEDS_UPSTREAM answer: (target, title, body) from its fenced block.

    The block's first line names the target repository, the second is the title, the rest the body.
    """
    match = _REQUEST_BLOCK.search(answer)
    if not match:
        return None
    lines = match.group("body").strip("\n").splitlines()
    if len(lines) < 2 or not lines[0].strip() or not lines[1].strip():
        return None
    return lines[0].strip(), lines[1].strip(), "\n".join(lines[2:]).strip()


def reask_note(labels: tuple[str, ...]) -> str:
    """The note for the one re-ask a malformed verdict gets (SPEC V5)."""
    return (
        "Your previous answer did not end with a verdict this step can route. Reply with the verdict line "
        f"only, `VERDICT: <label>`, where <label> is one of: {', '.join(labels)}."
    )
