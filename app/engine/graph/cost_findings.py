"""The validator's warnings about a policy's limits against the graph's cost (SPEC G7).

Why warnings and not errors: a limit below the cheapest path makes a graph that can never finish, and a limit
above the worst case limits nothing — both are almost certainly mistakes, but the graph itself is sound, and a
person resuming a run re-arms its budgets (SPEC B4). Each warning names the figure it was compared with.
"""

from __future__ import annotations

from app.engine.graph.cost_bound import Cost, CostBound, can_finish, cost_bound
from app.engine.graph.model import END, Graph
from app.engine.graph.validation_findings import Issue, IssueCode

NO_PATH = Issue(
    IssueCode.CANNOT_FINISH,
    "no run can reach __end__: every path needs a verdict its node cannot give (a check answers only PASS or FAIL)",
)


def cost_issues(graph: Graph) -> list[Issue]:
    """What the graph's policy cannot pay for, or limits to no effect. The worst case assumes an advisor (the
    dearer case), so a limit called useless is useless whatever the team. Without a limit, only whether any
    path can be taken is searched: validation stays linear and cheap on graphs of thousands of nodes."""
    policy = graph.policy
    limits = [
        (name, limit, measure)
        for name, limit, measure in (
            ("maxAttempts", policy.max_attempts, "missions"),
            ("maxCalls", policy.max_calls, "calls"),
            ("maxUnits", policy.max_units, "units"),
        )
        if limit is not None
    ]
    if not limits:
        return [] if can_finish(graph) else [NO_PATH]
    bound = cost_bound(graph)
    if bound.cheapest is None:
        return [NO_PATH]
    issues: list[Issue] = []
    for name, limit, measure in limits:
        issues += _limit_issues(bound, name, limit, measure)
    return issues


def _limit_issues(bound: CostBound, name: str, limit: float, measure: str) -> list[Issue]:
    assert bound.fewest is not None
    fewest, worst = _figure(bound.fewest, measure), _figure(bound.worst, measure)
    if limit < fewest:
        route = " → ".join([*(f"{hop.stage}:{hop.verdict}" for hop in bound.cheapest or ()), END])
        message = (
            f"policy {name} {limit:g} cannot pay for any path to __end__: the fewest {measure} a run to the end "
            f"takes is {fewest:g} (cheapest path {route}); no run of this graph can finish"
        )
        return [Issue(IssueCode.CANNOT_FINISH, message)]
    if limit > worst:
        message = (
            f"policy {name} {limit:g} is more than any run can use (the worst case is {worst:g} {measure}, "
            "with an advisor): the limit never stops a run"
        )
        return [Issue(IssueCode.USELESS_LIMIT, message)]
    return []


def _figure(cost: Cost, measure: str) -> float:
    return {"missions": cost.missions, "calls": cost.calls, "units": cost.units}[measure]
