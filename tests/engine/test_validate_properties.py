"""Property-based checks of the validator (SPEC G3): it never raises, and what it accepts is routable."""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.graph.model import END, Graph
from app.engine.graph.validate import validate_graph

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
STAGES = ["a", "b", "c", "d", "e"]
LABELS = ["PASS", "pass", "FAIL", "Fail", "*", "OK", "", "NEEDS_INPUT"]


@st.composite
def graph_like(draw: st.DrawFn) -> dict[str, Any]:
    """Near-valid graphs: the interesting cases are the ones that almost pass."""
    stages = draw(st.lists(st.sampled_from([*STAGES, END]), min_size=1, max_size=5))
    nodes: list[Any] = [
        {"stage": s, "capability": "c", "maxVisits": draw(st.integers(min_value=-1, max_value=4))} for s in stages
    ]
    if draw(st.booleans()):
        nodes.append(draw(json_values))
    edges = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "from": st.sampled_from([*STAGES, END]),
                    "verdict": st.sampled_from(LABELS),
                    "to": st.sampled_from([*STAGES, END, "zz"]),
                }
            ),
            max_size=10,
        )
    )
    data: dict[str, Any] = {"name": "g", "entry": draw(st.sampled_from([*STAGES, END])), "nodes": nodes, "edges": edges}
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["entry", "edges", "nodes", "name"]))] = draw(json_values)
    return data


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_validator_never_raises_on_arbitrary_json(data: Any) -> None:
    # SPEC G3: malformed input is reported, never an exception
    outcome = validate_graph(data)
    if not isinstance(data, dict):
        assert not outcome.valid


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(graph_like())
def test_accepted_graphs_terminate_and_route_as_a_function(data: dict[str, Any]) -> None:
    # SPEC G3: every accepted graph has a reachable termination and maps (node, label) to one edge
    outcome = validate_graph(data)
    assert (outcome.graph is not None) == (not outcome.errors)
    if outcome.graph is None:
        return
    graph = outcome.graph
    assert _termination_reachable(graph)
    for node in graph.nodes:
        labels = [edge.verdict.casefold() for edge in graph.outgoing(node.stage)]
        assert len(labels) == len(set(labels))


def _termination_reachable(graph: Graph) -> bool:
    seen, queue = {graph.entry}, deque([graph.entry])
    while queue:
        stage = queue.popleft()
        edges = graph.outgoing(stage)
        if not edges or any(edge.target == END for edge in edges):
            return True
        for edge in edges:
            if edge.target not in seen:
                seen.add(edge.target)
                queue.append(edge.target)
    return False
