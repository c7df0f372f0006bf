"""Whether every run of a graph can finish: termination, reachability and traps (SPEC G3, G4).

Part of graph validation (``app.engine.graph.validate``), kept apart because it is the one part that is graph
search rather than reading JSON: it sees only stage names and the edges' ends, as far as the lenient pass
could read them, so it runs even when some items are malformed.

Stages are numbered so that the searches walk lists of integers, which keeps them linear in practice on
graphs far larger than a person writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from app.engine.graph.model import END
from app.engine.graph.validation_findings import Issue, IssueCode


class Link(Protocol):
    """An edge's two ends as read leniently: ``None`` where absent or mistyped."""

    @property
    def source(self) -> str | None: ...

    @property
    def target(self) -> str | None: ...


class _Links:
    """The stages numbered in order (a repeated name keeps its first number) and the edges between them."""

    def __init__(self, stages: list[str], links: Iterable[Link]) -> None:
        ids: dict[str | None, int] = {}
        for stage in stages:
            ids.setdefault(stage, len(ids))
        self.ids = ids
        self.names = [name for name in ids if name is not None]
        self.forward: list[list[int]] = [[] for _ in self.names]
        self.backward: list[list[int]] = [[] for _ in self.names]
        ends = bytearray(len(self.names))
        leaves = bytearray(b"\x01") * len(self.names)  # no edge leaves it: a run ends there
        for edge in links:
            source = ids.get(edge.source)
            if source is None:
                continue
            leaves[source] = 0
            target = ids.get(edge.target)
            if edge.target == END:
                ends[source] = 1
            elif target is not None:
                self.forward[source].append(target)
                self.backward[target].append(source)
        self.finishing = [i for i in range(len(self.names)) if ends[i] or leaves[i]]


def flow_issues(entry: str | None, stages: list[str], links: Iterable[Link]) -> list[Issue]:
    """A run must always have a way to finish: the entry reaches a termination, every node is reachable from
    the entry, and no node is a trap that cannot reach a termination (reported only when the entry can)."""
    graph = _Links(stages, links)
    names = graph.names
    found: list[Issue] = []
    can_finish = _reach(graph.finishing, graph.backward)
    start = graph.ids.get(entry)
    if start is not None and not can_finish[start]:
        message = f"no termination is reachable from entry {entry!r}: a run could never finish"
        found.append(Issue(IssueCode.NO_TERMINATION, message, entry))
    reachable = _reach([start], graph.forward) if start is not None else bytearray(b"\x01") * len(names)
    for index in (i for i, seen in enumerate(reachable) if not seen):
        message = f"node {names[index]!r} cannot be reached from the entry"
        found.append(Issue(IssueCode.UNREACHABLE_NODE, message, names[index]))
    if start is None or can_finish[start]:
        for index in (i for i, seen in enumerate(can_finish) if not seen):
            message = f"node {names[index]!r} cannot reach a termination: a run entering it is stuck"
            found.append(Issue(IssueCode.TRAP_NODE, message, names[index]))
    return found


def _reach(start: list[int], links: list[list[int]]) -> bytearray:
    """Which stages ``start`` leads to along ``links`` (a depth-first walk; order does not matter)."""
    seen = bytearray(len(links))
    todo = list(start)
    for index in start:
        seen[index] = 1
    while todo:
        for nxt in links[todo.pop()]:
            if not seen[nxt]:
                seen[nxt] = 1
                todo.append(nxt)
    return seen
