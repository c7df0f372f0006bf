"""A transition in the making: the private copy of the run that one ``step`` changes, and the effects it
collects. It lives only inside one call of ``step``; from outside, a transition is still a pure function.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from app.engine import rules as engine_rules
from app.engine.base import Record
from app.engine.context import Context, Result, add_routing_line, compact_into
from app.engine.effects import Effect
from app.engine.events import GitState
from app.engine.graph.model import Graph
from app.engine.record import Category, Ledger, MissionSummary, Run, Totals
from app.engine.rules import Change, Rules

R = TypeVar("R", bound=Record)
_new = object.__new__


class Transition:
    """The record being built by one ``step``: a private copy of the run, changed field by field.

    The run passed to ``step`` is never touched — it is copied once here — so a transition stays a pure
    function while each field change costs an assignment instead of a copy of the whole record.
    ``owned`` holds the objects this transition made, by id, which it may change in place; it holds them
    strongly, so that an id is never reused by another object while the transition lives.
    """

    __slots__ = ("at", "effects", "git", "graph", "lines", "owned", "rules", "run")

    def __init__(
        self, run: Run, graph: Graph, at: datetime, git: GitState | None = None, rules: Rules | None = None
    ) -> None:
        self.run = run.but()
        self.graph = graph
        self.at = at
        self.git = git
        self.rules = rules or engine_rules.CURRENT  # the rules it is made under (SPEC J6, app/engine/rules.py)
        self.effects: list[Effect] = []
        self.owned: dict[int, object] = {}
        self.lines: list[str] = []  # the routing lines it added, which the record names (SPEC C3, ``finish``)

    def own(self, record: R) -> R:
        """``record`` itself if this transition made it, else a copy it then owns: changed in place, never
        the input run's objects."""
        if id(record) in self.owned:
            return record
        copy = _new(record.__class__)  # ``record.but()`` inlined: the copy a transition makes most often
        copy.__dict__ = record.__dict__.copy()
        self.owned[id(copy)] = copy
        return copy

    def ledger_line(self, category: Category) -> tuple[Ledger, Totals]:
        """The run's ledger and one of its category lines, owned by this transition."""
        ledger = self.run.ledger
        if id(ledger) not in self.owned:
            ledger = self.run.ledger = self.own(ledger)
            ledger.by_category = dict(ledger.by_category)
        line = ledger.by_category.get(category)
        if line is None:
            line = ledger.by_category[category] = Totals()
            self.owned[id(line)] = line
        elif id(line) not in self.owned:
            line = ledger.by_category[category] = self.own(line)
        return ledger, line

    def context(self) -> Context:
        """The run's context, owned, with its own list of results: results and lines are added in place."""
        if id(self.run.context) not in self.owned:
            context = self.run.context = self.own(self.run.context)
            context.results = list(context.results)
        return self.run.context

    def add_result(self, result: Result) -> None:
        """Append a mission's result and compact right after (SPEC C2, C3)."""
        context = self.context()
        self.owned[id(result)] = result
        context.results.append(result)
        compact_into(context, trim=self.rules.has(Change.TRIMMED_HISTORY))

    def add_line(self, line: str) -> None:
        """A routing line on the newest result, kept through every compaction (SPEC C3)."""
        self.lines.append(line)
        context = self.context()
        if not context.results:
            self.run.context = add_routing_line(context, line)
            return
        last = self.own(context.results[-1])
        last.routing = [*last.routing, line]
        context.results[-1] = last

    def missions(self) -> list[MissionSummary]:
        """The run's mission summaries as a list this transition owns."""
        if id(self.run.missions) not in self.owned:
            missions = list(self.run.missions)
            self.owned[id(missions)] = missions
            self.run.missions = missions
        return self.run.missions

    def emit(self, *effects: Effect) -> None:
        self.effects.extend(effects)

    def finish(self) -> tuple[Run, list[Effect]]:
        """The record and its effects. From rules 4 the record names the routing lines this transition added,
        which its events file keeps: the record's history is trimmed (SPEC J5), the journal's lines are not (C3)."""
        if self.rules.has(Change.ROUTING_JOURNALLED):
            self.run.routed = self.lines
        return self.run, self.effects
