"""The cost of a graph known before it runs: the worst case and the cheapest way to the end (SPEC G7).

Why: a budget set by guessing either stops a run that could have finished or limits nothing. Both figures are
derived from what the engine itself does, and every charge is priced by the engine's own ``charge_for``, so
that they cannot drift from what a run is charged:

- a visit is the entry mission (a delivery, or a retry the advisor asked for), at most one free re-ask (which
  costs no visit but is charged), a ``decide`` node's decision call, and the advisor's call when a mission ends
  badly; a ``check`` node runs code (an attempt, no model call, no units) however it is asked;
- a node is visited at most ``maxVisits`` times; a node on no cycle is entered once, unless it can re-enter
  itself (a retry the advisor asked for, or ``requiresChanges`` without a new commit);
- a run goes through the graph's strongly connected parts in order, so the worst case is the dearest chain of
  parts, each part counting all its nodes' full budgets: an upper bound, never a guess below the truth.

What people start is not counted, and the report says so: amendments, answered questions, a chosen route, a
resume (which also re-arms the budgets, SPEC B4), and the missions an upstream request's outcome starts.
Every node has a visit budget (``maxVisits`` is at least 1), so the worst case is always finite.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.engine.budget import charge_for
from app.engine.graph.model import CATCH_ALL, END, FAIL, PASS, Edge, Graph, Node, Policy
from app.engine.kinds import MissionKind

EXCLUDED = (
    "not counted: what people start (amendments, answered questions, chosen routes, resumes) and the missions "
    "an upstream request's outcome starts"
)
FLOAT_COUNT_LIMIT = 2**1000  # a visit count a float multiplies without overflow
PRICED_CACHE_SIZE = 4096
_PRICED: dict[tuple[bool, str, tuple[MissionKind, ...], tuple[tuple[str, float], ...]], Cost] = {}
MISSION_KINDS = (MissionKind.DELIVER, MissionKind.RETRY, MissionKind.REASK)


@dataclass(frozen=True, order=True)
class Cost:
    """Missions (attempts: what ``maxAttempts`` limits), model calls (``maxCalls``) and units (``maxUnits``)."""

    units: float = 0.0
    calls: int = 0
    missions: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.units + other.units, self.calls + other.calls, self.missions + other.missions)

    def times(self, count: int) -> Cost:
        """``count`` visits; units beyond what a float holds are infinite (a ``maxVisits`` of a hundred digits)."""
        units = self.units * count if count < FLOAT_COUNT_LIMIT else (math.inf if self.units else 0.0)
        return Cost(units, self.calls * count, self.missions * count)

    def each_max(self, other: Cost) -> Cost:
        """The larger figure in each measure: a bound for every measure at once."""
        return Cost(max(self.units, other.units), max(self.calls, other.calls), max(self.missions, other.missions))

    def text(self) -> str:
        return (
            f"{counted(self.missions, 'mission')}, {counted(self.calls, 'model call')}, {counted(self.units, 'unit')}"
        )

    def to_json(self) -> dict[str, float | int | None]:
        """``units`` is ``null`` when beyond what a float holds (JSON has no infinity)."""
        return {
            "missions": self.missions,
            "calls": self.calls,
            "units": self.units if math.isfinite(self.units) else None,
        }


def counted(number: float, noun: str) -> str:
    """``1 unit``, ``2.5 units``, ``3 calls``: a count with its noun in the number it takes (issue 28)."""
    shown = f"{number:g}" if isinstance(number, float) else str(number)
    return f"{shown} {noun}" + ("" if number == 1 else "s")


@dataclass(frozen=True)
class Hop:
    """One step of the cheapest path: the stage, the verdict it leaves on, and the charges of its visit."""

    stage: str
    verdict: str
    to: str
    kinds: tuple[MissionKind, ...]


@dataclass(frozen=True)
class CostBound:
    """The worst case of any run, the cheapest path to ``__end__`` (``None``: there is none), and the fewest
    missions, calls and units any path to the end needs, each measure on its own (``None``: no path, or not
    asked for)."""

    worst: Cost
    cheapest: tuple[Hop, ...] | None
    cheapest_cost: Cost | None
    fewest: Cost | None
    advisor: bool

    def lines(self) -> list[str]:
        """The report as text, one fact a line."""
        advice = "with" if self.advisor else "without"
        lines = [f"worst case: at most {self.worst.text()} ({advice} an advisor)"]
        if self.cheapest is None or self.cheapest_cost is None:
            lines.append("cheapest path: none reaches __end__")
        else:
            route = " → ".join([*(f"{hop.stage}:{hop.verdict}" for hop in self.cheapest), END])
            lines.append(f"cheapest path: {route} ({self.cheapest_cost.text()})")
        lines.append(EXCLUDED)
        return lines

    def to_json(self) -> dict[str, object]:
        path = None
        if self.cheapest is not None:
            path = [
                {"stage": hop.stage, "verdict": hop.verdict, "to": hop.to, "charges": [str(kind) for kind in hop.kinds]}
                for hop in self.cheapest
            ]
        return {
            "worst": self.worst.to_json(),
            "cheapest": None if self.cheapest_cost is None else {"path": path, **self.cheapest_cost.to_json()},
            "fewest": None if self.fewest is None else self.fewest.to_json(),
            "advisor": self.advisor,
            "excluded": EXCLUDED,
        }


def cost_bound(graph: Graph, policy: Policy | None = None, advisor: bool = True, fewest: bool = True) -> CostBound:
    """Both figures for ``graph`` under ``policy`` (the graph's own by default; only its unit costs matter here).
    ``advisor``: whether failed missions are put to an advisor, whose answer may retry (the dearer case);
    ``fewest``: whether to find each measure's fewest too (three more searches; the validator needs them only
    when the policy sets a limit)."""
    prices = policy or graph.policy
    worst = _worst(graph, prices, advisor)
    cheapest = _cheapest(graph, prices, lambda cost: cost)
    if cheapest is None:
        return CostBound(worst, None, None, None, advisor)
    least = _fewest(graph, prices) if fewest else None
    return CostBound(worst, cheapest, _path_cost(cheapest, graph, prices), least, advisor)


def worst_case(graph: Graph, policy: Policy, advisor: bool) -> Cost:
    """The worst case alone, computed once per graph, unit costs and advisor: what the status comment and the
    board show on every update."""
    key = ("cost_bound.worst", advisor, _unit_costs(policy))
    return graph.memo(key, lambda: _worst(graph, policy, advisor))


def _fewest(graph: Graph, policy: Policy) -> Cost:
    """The fewest units, calls and missions of any path to the end, each measure minimised on its own: a policy
    below one of them can never pay for any path."""

    def least(key: Callable[[Cost], Cost]) -> Cost:
        return _path_cost(_cheapest(graph, policy, key) or (), graph, policy)

    units = least(lambda cost: Cost(cost.units)).units
    calls = least(lambda cost: Cost(0.0, cost.calls)).calls
    missions = least(lambda cost: Cost(0.0, 0, cost.missions)).missions
    return Cost(units, calls, missions)


def priced(node: Node, kinds: tuple[MissionKind, ...], policy: Policy) -> Cost:
    """What the charges ``kinds`` at ``node`` cost, priced by the engine's ``charge_for``. A check node's every
    mission runs its check, as ``app.engine.flow.dispatch`` does. Only the capability and whether the node is a
    check matter, so the figure is kept for the next node alike (graphs of thousands of nodes are validated)."""
    key = (node.check is not None, node.capability, kinds, _unit_costs(policy))
    known = _PRICED.get(key)
    if known is None:
        if len(_PRICED) >= PRICED_CACHE_SIZE:
            _PRICED.clear()
        known = _PRICED[key] = _priced(node, kinds, policy)
    return known


def _unit_costs(policy: Policy) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(policy.unit_costs.items())) if policy.unit_costs else ()


def _priced(node: Node, kinds: tuple[MissionKind, ...], policy: Policy) -> Cost:
    total = Cost()
    for kind in kinds:
        if node.check is not None and kind in MISSION_KINDS:
            kind = MissionKind.CHECK
        charge = charge_for(kind, node.capability, policy)
        total = total + Cost(charge.units, charge.calls, charge.attempts)
    return total


def visit_outcomes(node: Node, graph: Graph, advisor: bool) -> list[tuple[MissionKind, ...]]:
    """Every dearest way one visit can go: the entry mission, then a decision, or a re-ask, or the advisor.

    A re-ask follows any answer that does not route; a model can always give one (a ``NEEDS_UPSTREAM``
    without a request, say), while a check answers only PASS or FAIL, so it is re-run only when one of them
    has no route. The advisor is asked once, when the visit's last mission ends badly; its retry is a visit."""
    entries = [MissionKind.DELIVER, MissionKind.RETRY] if advisor else [MissionKind.DELIVER]
    reasks = node.check is None or not _check_routes_all(graph, node.stage)
    outcomes: list[tuple[MissionKind, ...]] = []
    for entry in entries:
        outcomes.append((entry,))
        if node.decides:
            outcomes.append((entry, MissionKind.DECIDE))
        if reasks:
            outcomes.append((entry, MissionKind.REASK))
        if advisor:
            outcomes.append((entry, MissionKind.ADVISOR))
            if reasks:
                outcomes.append((entry, MissionKind.REASK, MissionKind.ADVISOR))
    return outcomes


def _check_routes_all(graph: Graph, stage: str) -> bool:
    edges = graph.outgoing(stage)
    labels = {edge.verdict.casefold() for edge in edges}
    return not edges or CATCH_ALL in labels or {PASS.casefold(), FAIL.casefold()} <= labels


def visit_worst(node: Node, graph: Graph, policy: Policy, advisor: bool) -> Cost:
    """The most one visit of ``node`` can be charged, in each measure."""
    reasks = node.check is None or not _check_routes_all(graph, node.stage)
    key = (
        "cost_bound.visit",
        node.check is not None,
        node.decides,
        reasks,
        node.capability,
        advisor,
        _unit_costs(policy),
    )
    return graph.memo(key, lambda: _visit_worst(node, graph, policy, advisor))


def _visit_worst(node: Node, graph: Graph, policy: Policy, advisor: bool) -> Cost:
    worst = Cost()
    for outcome in visit_outcomes(node, graph, advisor):
        worst = worst.each_max(priced(node, outcome, policy))
    return worst


def _successors(graph: Graph, stage: str) -> list[str]:
    return graph.memo(("cost_bound.successors", stage), lambda: _targets(graph, stage))


def _targets(graph: Graph, stage: str) -> list[str]:
    return list(dict.fromkeys(edge.target for edge in graph.outgoing(stage) if edge.target != END))


def _worst(graph: Graph, policy: Policy, advisor: bool) -> Cost:
    """The dearest chain of strongly connected parts from the entry, each part at its full visit budgets."""
    parts, part_of = _strong_parts(graph)
    best: list[Cost] = []
    for index, part in enumerate(parts):  # sinks first: every later part's successors are already priced
        own = Cost()
        for stage in part:
            node = graph.node(stage)
            own = own + visit_worst(node, graph, policy, advisor).times(_most_visits(node, graph, part, advisor))
        after = Cost()
        for stage in part:
            for target in _successors(graph, stage):
                if part_of[target] != index:
                    after = after.each_max(best[part_of[target]])
        best.append(own + after)
    return best[part_of[graph.entry]]


def _most_visits(node: Node, graph: Graph, part: list[str], advisor: bool) -> int:
    again = len(part) > 1 or node.stage in _successors(graph, node.stage) or advisor or node.requires_changes
    return node.max_visits if again else 1


def _strong_parts(graph: Graph) -> tuple[list[list[str]], dict[str, int]]:
    """Tarjan's strongly connected components of the stages reachable from the entry, iteratively (a graph
    may be deep), in the order Tarjan finds them: a part's successors are always found before it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    parts: list[list[str]] = []
    part_of: dict[str, int] = {}
    work: list[tuple[str, int]] = [(graph.entry, 0)]
    while work:
        stage, position = work.pop()
        if position == 0:
            index[stage] = low[stage] = len(index)
            stack.append(stage)
            on_stack.add(stage)
        successors = _successors(graph, stage)
        if position < len(successors):
            work.append((stage, position + 1))
            target = successors[position]
            if target not in index:
                work.append((target, 0))
            elif target in on_stack:
                low[stage] = min(low[stage], index[target])
            continue
        if low[stage] == index[stage]:
            part: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part_of[member] = len(parts)
                part.append(member)
                if member == stage:
                    break
            parts.append(part)
        if work:
            parent = work[-1][0]
            low[parent] = min(low[parent], low[stage])
    return parts, part_of


def leave_options(graph: Graph, node: Node, edge: Edge) -> list[tuple[MissionKind, ...]]:
    """The charges of a visit that leaves ``node`` by ``edge`` (none: a visit cannot take it).

    A check takes the edge of PASS or FAIL, or the catch-all when one of them has no edge of its own; a decision
    picks a label; a re-ask's answer routes as a worker's does (how a decide node reaches its catch-all)."""
    if node.check is not None:
        takes = edge.verdict.casefold() in (PASS.casefold(), FAIL.casefold())
        takes = takes or (edge.verdict == CATCH_ALL and not _check_routes_all_labelled(graph, node.stage))
        return [(MissionKind.CHECK,)] if takes else []
    if node.decides:
        options: list[tuple[MissionKind, ...]] = [(MissionKind.DELIVER, MissionKind.REASK)]
        if edge.verdict != CATCH_ALL and graph.labels(node.stage):
            options.insert(0, (MissionKind.DELIVER, MissionKind.DECIDE))
        return options
    return [(MissionKind.DELIVER,)]


def _check_routes_all_labelled(graph: Graph, stage: str) -> bool:
    labels = {edge.verdict.casefold() for edge in graph.outgoing(stage)}
    return {PASS.casefold(), FAIL.casefold()} <= labels


def _exits(graph: Graph, stage: str) -> tuple[Edge, ...]:
    """The edges a visit can leave by: a node without edges ends the run whatever it answers."""
    return graph.outgoing(stage) or (Edge.model_construct(source=stage, verdict=PASS, target=END),)


def _cheapest(graph: Graph, policy: Policy, key: Callable[[Cost], Cost]) -> tuple[Hop, ...] | None:
    """Dijkstra from the entry to ``__end__``; ``key`` says which measures count (all three by default, units
    first). A simple path visits no node twice, so every visit budget allows it."""
    queue: list[tuple[Cost, int, str, Hop | None]] = [(key(Cost()), 0, graph.entry, None)]
    came_by: dict[str, Hop | None] = {}
    tie = 0
    while queue:
        cost, _, stage, hop = heapq.heappop(queue)
        if stage == END:
            return _walk_back(hop, came_by)
        if stage in came_by:
            continue
        came_by[stage] = hop
        node = graph.node(stage)
        for edge in _exits(graph, stage):
            options = leave_options(graph, node, edge)
            if not options or edge.target in came_by:
                continue
            kinds = min(options, key=lambda kinds: key(priced(node, kinds, policy)))
            tie += 1
            step = key(priced(node, kinds, policy))
            heapq.heappush(queue, (cost + step, tie, edge.target, Hop(stage, edge.verdict, edge.target, kinds)))
    return None


def can_finish(graph: Graph) -> bool:
    """Whether some path to ``__end__`` is made of verdicts its nodes can give: the cheapest path's search
    without its prices, for a graph whose policy sets no limit to compare."""
    seen = {graph.entry}
    todo = [graph.entry]
    while todo:
        stage = todo.pop()
        node = graph.node(stage)
        for edge in _exits(graph, stage):
            if edge.target in seen or not leave_options(graph, node, edge):
                continue
            if edge.target == END:
                return True
            seen.add(edge.target)
            todo.append(edge.target)
    return False


def _walk_back(last: Hop | None, came_by: dict[str, Hop | None]) -> tuple[Hop, ...]:
    path: list[Hop] = []
    while last is not None:
        path.append(last)
        last = came_by[last.stage]
    return tuple(reversed(path))


def _path_cost(path: Iterable[Hop], graph: Graph, policy: Policy) -> Cost:
    total = Cost()
    for hop in path:
        total = total + priced(graph.node(hop.stage), hop.kinds, policy)
    return total
