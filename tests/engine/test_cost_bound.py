"""The cost of a graph known before a run (SPEC G7): the worst case bounds every run the real engine can make,
and the cheapest path's figure is what some run pays.

The runs are made by ``app.engine.graph.simulate`` — the real ``step`` applied to answers — with random answers:
verdicts of the node, unknown words, no verdict, ``NEEDS_UPSTREAM`` without a request (a re-ask), missions that
fail (the advisor's call and its retry), missions without a commit where one is required.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.effects import AskAdvisor, AskDecision, OpenGate
from app.engine.events import AdviceReturned, DecisionReturned, Event, GateApproved, MissionFinished
from app.engine.graph.cost_bound import Cost, Hop, can_finish, cost_bound
from app.engine.graph.model import CATCH_ALL, FAIL, PASS, Graph
from app.engine.graph.simulate import Answered, finished, simulate
from app.engine.graph.validate import parse_graph, validate_graph
from app.engine.record import Advice, MissionKind, MissionStatus, Run
from tests.helpers import edge, graph, node

LABELS = (PASS, FAIL, "RETHINK", CATCH_ALL)
UNMATCHED = "SOMETHING_ELSE"
UNCITED = "```request\nocto/lib\nAdd a hook\nplease\n```\nVERDICT: NEEDS_UPSTREAM"  # a request citing no finding


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    """A small graph of up to five nodes: checks, decisions, required commits, budgets of 1 to 3 visits."""
    count = draw(st.integers(1, 5))
    stages = [f"s{index}" for index in range(count)]
    nodes = []
    for stage in stages:
        kind = draw(st.sampled_from(["work", "work", "check", "decide"]))
        extra: dict[str, Any] = {"maxVisits": draw(st.integers(1, 3))}
        if kind == "check":
            extra["check"] = "true"
        if kind == "decide":
            extra["decide"] = True
        if draw(st.booleans()):
            extra["requiresChanges"] = True
        nodes.append(node(stage, draw(st.sampled_from(["coding", "review"])), **extra))
    edges = []
    for stage in stages:
        labels = draw(st.lists(st.sampled_from(LABELS), min_size=0, max_size=3, unique=True))
        for label in labels:
            edges.append(edge(stage, label, draw(st.sampled_from([*stages, "__end__"]))))
    costs = draw(
        st.dictionaries(
            st.sampled_from(["coding", "review", "reask", "decide", "advisor", "retry"]),
            st.sampled_from([0.5, 2.0, 3.0]),
            max_size=3,
        )
    )
    return graph(nodes, edges, entry="s0", policy={"unitCosts": costs})


def random_responder(seed: int) -> Any:
    """Answers chosen at random among everything a worker, a check, a decision and an advisor can say."""
    rng = random.Random(seed)

    def respond(run: Run, effect: Answered, key: str, at: datetime) -> Event | None:
        if isinstance(effect, OpenGate):
            return GateApproved(key=key, at=at)
        if isinstance(effect, AskDecision):
            answer = rng.choice([*effect.labels, UNMATCHED, ""])
            return DecisionReturned(key=key, at=at, seq=effect.seq, answer=f"VERDICT: {answer}")
        if isinstance(effect, AskAdvisor):
            advice = rng.choice([Advice.RETRY, Advice.REVISE, Advice.ESCALATE, None])
            return AdviceReturned(key=key, at=at, seq=effect.seq, advice=advice, instruction=rng.choice(["", "fix"]))
        words = [*LABELS[:3], UNMATCHED, "NEEDS_UPSTREAM"]
        answer = rng.choice([*(f"VERDICT: {word}" for word in words), "no verdict line", UNCITED])
        status = rng.choice([MissionStatus.DONE] * 4 + [MissionStatus.FAILED])
        return MissionFinished(
            key=key,
            at=at,
            seq=effect.seq,
            status=status,
            answer=answer,
            commits=rng.choice([0, 1, 1]),
            exit_code=rng.choice([0, 1]),
        )

    return respond


def path_responder(path: tuple[Hop, ...], labels: dict[str, tuple[str, ...]]) -> Any:
    """Answers that take the cheapest path hop by hop, each visit charged exactly as the hop says."""
    hops = list(path)

    def word(hop: Hop) -> str:
        return UNMATCHED if hop.verdict == CATCH_ALL else hop.verdict

    def respond(run: Run, effect: Answered, key: str, at: datetime) -> Event | None:
        hop = hops[0]
        if isinstance(effect, OpenGate):
            return GateApproved(key=key, at=at)
        if isinstance(effect, AskDecision):
            hops.pop(0)
            return DecisionReturned(key=key, at=at, seq=effect.seq, answer=f"VERDICT: {hop.verdict}")
        assert not isinstance(effect, AskAdvisor)
        if hop.kinds == (MissionKind.DELIVER, MissionKind.REASK) and effect.kind is MissionKind.DELIVER:
            answer = "VERDICT: NEEDS_UPSTREAM"  # no request block: the one re-ask follows
        elif hop.kinds == (MissionKind.DELIVER, MissionKind.DECIDE):
            answer = "worked"
        else:
            hops.pop(0)
            answer = f"VERDICT: {word(hop)}"
        exit_code = 0
        if hop.kinds == (MissionKind.CHECK,):
            exit_code = 1 if hop.verdict == FAIL or (hop.verdict == CATCH_ALL and PASS in labels[hop.stage]) else 0
        return MissionFinished(
            key=key, at=at, seq=effect.seq, status=MissionStatus.DONE, answer=answer, commits=1, exit_code=exit_code
        )

    return respond


def spent(run: Run) -> Cost:
    return Cost(run.ledger.units, run.ledger.calls, run.ledger.attempts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(
    data=graphs(),
    seeds=st.lists(st.integers(0, 2**32), min_size=1, max_size=6),
    advisor=st.booleans(),
    supervision=st.booleans(),
)
def test_no_simulated_run_exceeds_the_worst_case(
    data: dict[str, Any], seeds: list[int], advisor: bool, supervision: bool
) -> None:
    # SPEC G7: the worst case is an upper bound of every run the real engine makes, in every measure; a
    # supervision run's uncited request takes the same one re-ask (SPEC U6)
    validation = validate_graph(data)
    if not validation.valid:
        return
    graph_ = parse_graph(data)
    bound = cost_bound(graph_, advisor=advisor)
    for seed in seeds:
        run = simulate(graph_, random_responder(seed), advisor=advisor, supervision=supervision).run
        used = spent(run)
        assert used.missions <= bound.worst.missions, (run.ledger, bound.worst)
        assert used.calls <= bound.worst.calls, (run.ledger, bound.worst)
        assert used.units <= bound.worst.units + 1e-9, (run.ledger, bound.worst)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=graphs())
def test_the_cheapest_path_is_what_some_run_pays(data: dict[str, Any]) -> None:
    # SPEC G7: the cheapest path's figure is achieved by a real run, and no run to the end pays fewer units
    if not validate_graph(data).valid:
        return
    graph_ = parse_graph(data)
    bound = cost_bound(graph_)
    assert can_finish(graph_) is (bound.cheapest is not None)  # the validator's search without prices agrees
    if bound.cheapest is None:  # a check routed on a label it cannot answer: no run reaches the end
        assert bound.cheapest_cost is None and bound.fewest is None
        return
    assert bound.cheapest_cost is not None and bound.fewest is not None
    labels = {n.stage: graph_.labels(n.stage) for n in graph_.nodes}
    simulation = simulate(graph_, path_responder(bound.cheapest, labels))
    assert finished(simulation.run), simulation.run.reason
    assert [(hop.stage, hop.verdict, hop.to) for hop in simulation.hops] == [
        (hop.stage, hop.verdict, hop.to) for hop in bound.cheapest
    ]
    assert spent(simulation.run) == bound.cheapest_cost
    assert bound.fewest.units <= bound.cheapest_cost.units
    assert bound.fewest.calls <= bound.cheapest_cost.calls


def loop(**policy: Any) -> Graph:
    """work → review; review FAIL → work, PASS → end; three visits each."""
    return parse_graph(
        graph(
            [node("work"), node("review", "review")],
            [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")],
            entry="work",
            policy=policy,
        )
    )


def test_the_worst_case_of_a_review_loop_counts_visits_reasks_and_the_advisor() -> None:
    # SPEC G7: 2 nodes x 3 visits; each visit a mission and a re-ask (2 missions), and the advisor's call (3 calls)
    bound = cost_bound(loop(unitCosts={"review": 2.0}), advisor=True)
    assert bound.worst == Cost(units=3 * (1 + 1 + 1) + 3 * (2 + 2 + 2), calls=18, missions=12)
    without = cost_bound(loop(), advisor=False)
    assert without.worst == Cost(units=12.0, calls=12, missions=12)
    assert [(hop.stage, hop.verdict) for hop in without.cheapest or ()] == [("work", PASS), ("review", PASS)]
    assert without.cheapest_cost == Cost(units=2.0, calls=2, missions=2)


def test_a_check_costs_an_attempt_and_no_call_and_a_branch_counts_once() -> None:
    # SPEC G7: a check runs code; of two branches a run takes one, so the dearer one counts, not both
    g = parse_graph(
        graph(
            [node("a", maxVisits=1), node("t", "test", check="true", maxVisits=1), node("x", maxVisits=1)],
            [
                edge("a", "PASS", "t"),
                edge("a", "FAIL", "x"),
                edge("t", "PASS", "__end__"),
                edge("t", "FAIL", "__end__"),
                edge("x", "PASS", "__end__"),
            ],
            entry="a",
        )
    )
    bound = cost_bound(g, advisor=False)
    assert bound.worst == Cost(units=4.0, calls=4, missions=4)  # a and x, each a mission and a re-ask; t is not added
    assert bound.cheapest_cost == Cost(units=1.0, calls=1, missions=2)  # a, then the check t


def test_the_validator_warns_of_a_policy_that_cannot_pay_for_the_cheapest_path() -> None:
    # SPEC G7: a warning, not an error: the graph is valid, and the message names the figure and the path
    outcome = validate_graph(
        graph([node("a"), node("b")], [edge("a", "PASS", "b"), edge("b", "PASS", "__end__")], policy={"maxCalls": 1})
    )
    assert outcome.valid
    [issue] = outcome.warnings
    assert issue.code.value == "cannot-finish"
    assert "maxCalls 1 cannot pay for any path" in issue.message and "a:PASS → b:PASS → __end__" in issue.message
    assert not validate_graph(
        graph([node("a"), node("b")], [edge("a", "PASS", "b"), edge("b", "PASS", "__end__")], policy={"maxCalls": 2})
    ).warnings


def test_the_validator_warns_of_a_limit_above_the_worst_case_and_of_a_graph_no_run_finishes() -> None:
    # SPEC G7: one visit of one node takes at most 2 missions (the mission and its re-ask): 3 never binds, 2 may
    one = [node("a", maxVisits=1)], [edge("a", "PASS", "__end__")]
    [issue] = validate_graph(graph(*one, policy={"maxAttempts": 3})).warnings
    assert issue.code.value == "useless-limit" and "worst case is 2 missions" in issue.message
    assert not validate_graph(graph(*one, policy={"maxAttempts": 2})).warnings
    checked = graph([node("a", check="true")], [edge("a", "DONE", "__end__")])  # a check never says DONE
    codes = [issue.code.value for issue in validate_graph(checked).warnings]
    assert codes == ["cannot-finish"]
