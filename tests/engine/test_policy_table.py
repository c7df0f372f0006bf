"""The coordinator seed's measured runs, reproduced as policy outcomes (SPEC P1–P3, V8).

Policy of the seed: at most 4 attempts, 6 calls and 9 units; a call costs 2 units for the technical
specialist and 1 for the account and service specialists and for the selector. Runs whose routing is a
graph go through the real engine; the selector runs, whose fork has no step before it, go through the
same budget functions in the seed's own loop shape.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from app.engine.budget import apply_charge, charge_for, record_usage, refusal
from app.engine.graph.model import Policy
from app.engine.record import Ledger, MissionKind, Status, Usage, Window
from tests.engine.driver import Driver
from tests.helpers import edge, graph, node

POLICY: dict[str, Any] = {
    "maxAttempts": 4,
    "maxCalls": 6,
    "maxUnits": 9,
    "unitCosts": {"technical": 2, "account": 1, "service": 1, "decide": 1},
}


def chain(*stages: str, progress: bool = False, policy: dict[str, Any] | None = None) -> dict[str, Any]:
    """Specialists in a fixed order; with ``progress`` each must land a change to be accepted (SPEC P4)."""
    nodes = [node(stage, stage, maxVisits=10, requiresChanges=progress) for stage in stages]
    edges = [edge(a, "PASS", b) for a, b in itertools.pairwise(stages)]
    edges.append(edge(stages[-1], "PASS", "__end__"))
    return graph(nodes, edges, entry=stages[0], policy=policy or POLICY)


def engine_run(data: dict[str, Any], answers: list[str], commits: int = 1) -> tuple[str, tuple[int, int, float, int]]:
    d = Driver(data)
    for answer in answers:
        if d.run.status is not Status.RUNNING:
            break
        d.finish(answer, commits=commits)
    outcome = "Complete" if d.run.status is Status.AWAITING_MERGE else d.run.reason.code.value  # type: ignore[union-attr]
    ledger = d.run.ledger
    return outcome, (ledger.attempts, ledger.calls, ledger.units, ledger.accepted)


def selector_run(choice: str) -> tuple[str, tuple[int, int, float, int]]:
    """The seed's mixed case: technical and account both legal, a selector at the fork, service last."""
    policy = Policy.model_validate(POLICY)
    ledger, window = Ledger(), Window()
    remaining = ["technical", "account", "service"]

    def call(kind: MissionKind, capability: str, accepted: bool) -> str | None:
        nonlocal ledger
        cost = charge_for(kind, capability, policy)
        refused = refusal(ledger, window, policy, cost)
        if refused:
            return refused[0].value
        ledger = record_usage(apply_charge(ledger, cost), cost.category, Usage(), accepted)
        return None

    while remaining:
        legal = [role for role in remaining[:2] if role != "service"] or ["service"]
        role = legal[0]
        if len(legal) > 1:
            stop = call(MissionKind.DECIDE, "decide", accepted=False)
            if stop:
                return stop, (ledger.attempts, ledger.calls, ledger.units, ledger.accepted)
            if choice not in legal:
                return "invalid_selection", (ledger.attempts, ledger.calls, ledger.units, ledger.accepted)
            role = choice
        stop = call(MissionKind.DELIVER, role, accepted=True)
        if stop:
            return stop, (ledger.attempts, ledger.calls, ledger.units, ledger.accepted)
        remaining.remove(role)
    return "Complete", (ledger.attempts, ledger.calls, ledger.units, ledger.accepted)


ENGINE_RUNS = [
    ("basic, fixed order", chain("technical", "service"), ["finding", "next step"], "Complete", (2, 2, 3, 2)),
    (
        "mixed, fixed technical-first",
        chain("technical", "account", "service"),
        ["a", "b", "c"],
        "Complete",
        (3, 3, 4, 3),
    ),
    (
        "basic, specialist claims a fix",
        chain("technical", "service", progress=True),
        ["The issue is fixed."] * 6,
        "attempt_budget_exhausted",
        (4, 4, 8, 0),
    ),
    (
        "basic, allowance of 2 units",
        chain("technical", "service", policy={**POLICY, "maxUnits": 2}),
        ["a", "b"],
        "cost_budget_exhausted",
        (1, 1, 2, 1),
    ),
]


@pytest.mark.parametrize(("name", "data", "answers", "outcome", "counts"), ENGINE_RUNS, ids=[r[0] for r in ENGINE_RUNS])
def test_seed_runs_through_the_engine(
    name: str, data: dict[str, Any], answers: list[str], outcome: str, counts: tuple[int, int, float, int]
) -> None:
    # SPEC P1, P2: charged before the call, never refunded, typed outcome
    # the no-progress specialist claims a fix but lands no change: rejected, re-entered, never accepted
    commits = 0 if "claims a fix" in name else 1
    assert engine_run(data, answers, commits) == (outcome, counts)


@pytest.mark.parametrize(
    ("choice", "outcome", "counts"),
    [("account", "Complete", (3, 4, 5, 3)), ("done", "invalid_selection", (0, 1, 1, 0))],
)
def test_seed_selector_runs(choice: str, outcome: str, counts: tuple[int, int, float, int]) -> None:
    # SPEC V8, P2: the selector is a call (no attempt) charged before it runs; a choice outside the list stops
    assert selector_run(choice) == (outcome, counts)
