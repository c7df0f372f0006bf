"""Reading a verdict from an answer and routing on it (SPEC V5, V6).

The verdict is the *last* line of the form ``VERDICT: label`` — a worker may quote the contract or
change its mind earlier in its answer; what it ends with counts. Only the answer's own words count: a line
inside a fenced block (``` or ~~~, an unclosed one running to the end) or a Markdown quote (``>``) is
what the worker quotes — its prompt, the request — and never routes (SPEC V5, GH9). Routing is a function of
(node, label): the edge with that label (any case), else the catch-all, else nothing — and "nothing" is never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from app.engine.graph.contract import ContractKind, verdict_contract
from app.engine.graph.model import CATCH_ALL, CONFLICT, END, NEEDS_INPUT, NEEDS_UPSTREAM, PASS, Edge, Graph

_VERDICT_LINE = re.compile(
    r"^[\s*_`~#-]*verdict[\s*_`~]*:[\s*_`~]*(?P<label>[^\s*_`~][^*`~]*?)[\s*_`~.]*$", re.IGNORECASE
)
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def own_lines(answer: str) -> list[tuple[int, str]]:
    """The answer's own lines with their indexes: no line of a fenced block (its fences included), no
    quoted line and no line of an HTML comment that spans lines. A backtick fence whose info string has a
    backtick is inline code, not a fence (CommonMark); a fence closes only with the same character, at
    least as long, and nothing after it; any indentation counts, so that a fence in a list item is a fence
    too."""
    return [(index, line) for index, line, opens in _top_level(answer) if not opens]


def _top_level(answer: str) -> list[tuple[int, str, bool]]:
    """(index, line, opens a fence) of every line outside fences, quotes and HTML comments, the opening
    fences included."""
    top: list[tuple[int, str, bool]] = []
    opened, commented = "", False
    for index, line in enumerate(answer.splitlines()):
        if opened:
            opened = "" if _closes(line, opened) else opened
        elif commented:
            commented = "-->" not in line
        elif _opens_comment(line):  # an HTML comment is hidden text, never the worker's word
            commented = True
        elif not line.lstrip().startswith(">"):
            opened = _opening(line)
            top.append((index, line, bool(opened)))
    return top


def _opens_comment(line: str) -> bool:
    """The line starts an HTML comment that it does not close: the lines up to ``-->`` are inside it."""
    return "<!--" in line and "-->" not in line.split("<!--")[-1]


def _opening(line: str) -> str:
    match = _FENCE.match(line)
    if not match or (match.group("fence")[0] == "`" and "`" in match.group("info")):
        return ""
    return match.group("fence")


def _closes(line: str, opened: str) -> bool:
    match = _FENCE.match(line)
    return bool(
        match
        and match.group("fence")[0] == opened[0]
        and len(match.group("fence")) >= len(opened)
        and not match.group("info").strip()
    )


def _verdict_lines(answer: str) -> list[tuple[int, str]]:
    """(index, label) of every own line that is a verdict line, in order."""
    found: list[tuple[int, str]] = []
    for index, line in own_lines(answer):
        match = _VERDICT_LINE.match(line)
        if match and match.group("label").strip():
            found.append((index, match.group("label").strip()))
    return found


def verdict_labels(answer: str) -> list[str]:
    """The labels of every own ``VERDICT: label`` line, in order: a decision names one label or none (SPEC V8)."""
    return [label for _, label in _verdict_lines(answer)]


def parse_verdict(answer: str) -> str | None:
    """The label of the last own ``VERDICT: label`` line, emphasis and backticks ignored; ``None`` if none.

    An answer with no fence (```, ~~~) and no HTML comment has no state to carry from line to line: its own
    lines are its unquoted ones, read from the last, and the first verdict line found is the one that counts.
    Most answers are such, and a transition then matches one line instead of every line twice."""
    if "```" in answer or "~~~" in answer or "<!--" in answer:
        found = _verdict_lines(answer)
        return found[-1][1] if found else None
    # The lines of the answer's tail but its first (which may start mid-line) are the answer's last lines: the
    # verdict is almost always among them; the whole answer is split only when it is not.
    lines = answer[-_TAIL:].splitlines()[1:] if len(answer) > _TAIL else answer.splitlines()
    for tried in (lines, answer.splitlines()) if len(answer) > _TAIL else (lines,):
        for line in reversed(tried):  # a quoted line never matches: ``>`` cannot start a verdict line
            if (match := _VERDICT_LINE.match(line)) and (label := match.group("label").strip()):
                return label
    return None


_TAIL = 256


def without_verdict(answer: str) -> str:
    """The answer without the verdict line that counts (the last own one): what is left for a person to read."""
    lines = answer.splitlines()
    found = _verdict_lines(answer)
    if found:
        del lines[found[-1][0]]
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
    for edge in edges:  # a CONFLICT edge is the engine's (SPEC V9): an answer saying CONFLICT does not take it
        if edge.verdict != CATCH_ALL and edge.verdict.casefold() == wanted and wanted != CONFLICT.casefold():
            return Routing(edge.verdict, edge)
    catch_all = next((edge for edge in edges if edge.verdict == CATCH_ALL), None)
    return Routing(verdict, catch_all)


def request_block(answer: str) -> tuple[str, str, str] | None:
    """The feature request of a NEEDS_UPSTREAM answer: (target, title, body) from its fenced block.

    The block is the answer's own first ``request`` fence (one inside another fence or a quote is quoted,
    not asked). Its first line names the target repository, the second is the title, the rest the body;
    an unclosed block is no request.
    """
    lines = answer.splitlines()
    for index, line, opens in _top_level(answer):
        fence = _opening(line) if opens else ""
        if fence and _opening_info(line) == "request":
            end = next((at for at in range(index + 1, len(lines)) if _closes(lines[at], fence)), None)
            return None if end is None else _request_of(lines[index + 1 : end])
    return None


def _opening_info(line: str) -> str:
    match = _FENCE.match(line)
    return match.group("info").strip().casefold() if match else ""


def _request_of(body: list[str]) -> tuple[str, str, str] | None:
    text = "\n".join(body).strip("\n").splitlines()
    if len(text) < 2 or not text[0].strip() or not text[1].strip():
        return None
    return text[0].strip(), text[1].strip(), "\n".join(text[2:]).strip()


UPSTREAM_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]*/([A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*|\*)$"
_UPSTREAM = re.compile(UPSTREAM_PATTERN)


def upstream_allowed(target: str, allowed: Sequence[str]) -> bool:
    """Whether a NEEDS_UPSTREAM request may go to ``target`` (SPEC U3, GH9): an entry ``owner/repo`` allows
    that repository, ``owner/*`` every repository of the owner (GitHub's names are case-insensitive).

    The request is the agent's words, and the agent may have been steered by the request it works on, so
    nothing is allowed that the team did not list: no list, no upstream request."""
    if target.endswith("/*") or not _UPSTREAM.match(target):
        return False
    owner, _, name = target.casefold().partition("/")
    for entry in allowed:
        entry_owner, _, entry_name = entry.casefold().partition("/")
        if entry_owner == owner and entry_name in ("*", name):
            return True
    return False


def reask_note(labels: tuple[str, ...]) -> str:
    """The note for the one re-ask a malformed verdict gets (SPEC V5)."""
    return (
        "Your previous answer did not end with a verdict this step can route. Reply with the verdict line "
        f"only, `VERDICT: <label>`, where <label> is one of: {', '.join(labels)}."
    )
