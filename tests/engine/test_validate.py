"""The validator: every code, every error reported, lenient reading of broken files (SPEC G1–G5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.errors import GraphInvalid
from app.engine.graph.validate import WARNING_CODES, IssueCode, parse_graph, validate_graph
from app.engine.team import parse_team
from tests.helpers import FIXTURES, edge, graph, node

TEAM = parse_team({"name": "core", "roles": [{"name": "dev", "capabilities": ["coding"]}]})
ERROR_FIXTURES = sorted((FIXTURES / "graphs" / "errors").glob("*.json"))
WARNING_FIXTURES = sorted((FIXTURES / "graphs" / "warnings").glob("*.json"))


def codes(data: object, team: object = None) -> list[str]:
    return [issue.code.value for issue in validate_graph(data, team).issues]  # type: ignore[arg-type]


def test_there_is_one_fixture_per_code() -> None:
    named = {path.stem for path in ERROR_FIXTURES + WARNING_FIXTURES}
    assert named == {code.value for code in IssueCode}


@pytest.mark.parametrize("path", ERROR_FIXTURES, ids=lambda p: p.stem)
def test_each_error_fixture_is_refused_with_its_code(path: Path) -> None:
    # SPEC G3: the graph is refused and the error carries its code and a message
    outcome = validate_graph(json.loads(path.read_text()))
    assert not outcome.valid and outcome.graph is None
    assert path.stem in [issue.code.value for issue in outcome.errors]
    assert all(issue.message for issue in outcome.errors)


@pytest.mark.parametrize("path", WARNING_FIXTURES, ids=lambda p: p.stem)
def test_each_warning_fixture_is_accepted_with_its_warning(path: Path) -> None:
    # SPEC G4: warnings do not refuse the graph
    outcome = validate_graph(json.loads(path.read_text()), TEAM)
    assert outcome.valid and outcome.graph is not None
    assert [issue.code.value for issue in outcome.warnings] and all(
        issue.code in WARNING_CODES for issue in outcome.issues
    )
    assert path.stem in [issue.code.value for issue in outcome.warnings]


def test_every_error_is_reported_not_only_the_first() -> None:
    # SPEC G3: all errors, each with the stage or edge concerned
    data = graph(
        [node("a", maxVisits=0), node("b", capabilty="x"), node("a")],
        [edge("a", "PASS", "b"), edge("a", "pass", "c"), {"from": "b", "to": "__end__"}, edge("zz", "X", "a")],
    )
    issues = validate_graph(data).issues
    found = {(i.code.value, i.stage, i.edge) for i in issues}
    assert ("bad-max-visits", "a", None) in found
    assert ("duplicate-stage", "a", None) in found
    assert ("duplicate-verdict", "a", 1) in found
    assert ("edge-to-unknown", "a", 1) in found
    assert ("edge-verdict-missing", "b", 2) in found
    assert ("edge-from-unknown", "zz", 3) in found
    assert [i.message for i in issues if i.code is IssueCode.SCHEMA] == [
        "node 'b': unknown key 'capabilty' (did you mean 'capability'?)"
    ]


def test_unknown_key_gets_a_suggestion() -> None:
    # SPEC G1: unknown keys are errors, typos must not pass silently
    issues = validate_graph(graph([node("a", humanGat=True)], [edge("a", "PASS", "__end__")])).issues
    assert [i.code for i in issues] == [IssueCode.SCHEMA]
    assert "humanGat" in issues[0].message and "humanGate" in issues[0].message


@pytest.mark.parametrize("labels", [("FAIL", "fail"), ("Pass", "PASS"), ("*", "*"), ("ok", "OK")])
def test_duplicate_labels_compare_without_case(labels: tuple[str, str]) -> None:
    # SPEC G3: two outgoing edges with one label, compared without regard to case
    data = graph(
        [node("a"), node("b")],
        [edge("a", labels[0], "b"), edge("a", labels[1], "__end__"), edge("b", "PASS", "__end__")],
    )
    assert codes(data) == ["duplicate-verdict"]


def test_same_label_on_different_nodes_is_fine() -> None:
    data = graph([node("a"), node("b")], [edge("a", "PASS", "b"), edge("b", "PASS", "__end__")])
    assert codes(data) == []


def test_termination_reached_only_through_a_cycle_is_accepted() -> None:
    # SPEC G5: cycles are allowed; the only way out is after the loop
    data = graph(
        [node("a"), node("b"), node("c")],
        [
            edge("a", "PASS", "b"),
            edge("b", "FAIL", "a"),
            edge("b", "PASS", "c"),
            edge("c", "RETRY", "a"),
            edge("c", "PASS", "__end__"),
        ],
    )
    outcome = validate_graph(data)
    assert outcome.valid and outcome.issues == ()


def test_pure_cycle_without_exit_is_refused() -> None:
    # SPEC G3: no termination reachable from the entry
    data = graph([node("a"), node("b")], [edge("a", "PASS", "b"), edge("b", "PASS", "a")])
    assert codes(data) == ["no-termination"]


def test_node_without_outgoing_edge_is_a_termination() -> None:
    data = graph([node("a"), node("b")], [edge("a", "PASS", "b")])
    assert codes(data) == []


def test_catch_all_edge_is_a_route_and_not_a_label() -> None:
    # SPEC G2, V1: '*' is followed when nothing else matches, and is not one of the node's labels
    data = graph([node("a"), node("b")], [edge("a", "PASS", "b"), edge("a", "*", "a"), edge("b", "*", "__end__")])
    parsed = parse_graph(data)
    assert parsed.labels("a") == ("PASS",)
    assert parsed.labels("b") == ()


def test_catch_all_can_be_the_only_way_out() -> None:
    data = graph([node("a")], [edge("a", "*", "__end__")])
    assert codes(data) == []


@pytest.mark.parametrize("label", ["NEEDS_INPUT", "needs_upstream", " Needs_Input "])
def test_reserved_verdicts_may_not_label_an_edge(label: str) -> None:
    # SPEC G2, V6
    data = graph([node("a")], [edge("a", label, "__end__"), edge("a", "PASS", "__end__")])
    assert "reserved-name" in codes(data)


def test_end_is_not_a_stage_name_and_not_an_entry() -> None:
    # SPEC G2
    assert codes(graph([node("__end__")], [], entry="__end__")) == ["reserved-name", "entry-unknown"]


def test_edges_to_a_malformed_node_are_not_reported_as_unknown() -> None:
    data = graph([node("a"), {"stage": "b"}], [edge("a", "PASS", "b"), edge("b", "PASS", "__end__")])
    assert codes(data) == ["schema"]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([], "not a list"),
        ("graph", "not a string"),
        (None, "not null"),
        (3.5, "not a number"),
        ({"name": 7, "entry": "a", "nodes": [], "edges": []}, "name"),
        ({"name": "x", "entry": "a", "nodes": {}, "edges": []}, "nodes"),
        ({"name": "x", "entry": "a", "nodes": ["a"], "edges": []}, "node 0 must be an object"),
        ({"name": "x", "entry": "a", "nodes": [node("a", maxVisits="3")], "edges": []}, "maxVisits"),
        ({"name": "x", "entry": "a", "nodes": [node("a", humanGate="yes")], "edges": []}, "humanGate"),
        ({"name": "x", "entry": "a", "nodes": [node("a")], "edges": [7]}, "edge 0 must be an object"),
    ],
)
def test_wrong_shapes_are_schema_errors_never_exceptions(data: object, fragment: str) -> None:
    issues = validate_graph(data).issues
    schema = [i for i in issues if i.code is IssueCode.SCHEMA]
    assert schema and any(fragment in i.message for i in schema)


def test_max_visits_of_true_is_not_an_integer() -> None:
    issues = validate_graph(graph([node("a", maxVisits=True)], [edge("a", "PASS", "__end__")])).issues
    assert [i.code for i in issues] == [IssueCode.SCHEMA]


def test_check_and_decide_together_are_refused() -> None:
    data = graph(
        [node("a", check="true", decide=True), node("b")],
        [edge("a", "PASS", "b"), edge("a", "FAIL", "b"), edge("b", "PASS", "__end__")],
    )
    assert "schema" in codes(data)


def test_parse_graph_raises_with_every_error() -> None:
    data = graph([node("a", maxVisits=0)], [edge("a", "PASS", "nowhere")], entry="zz")
    with pytest.raises(GraphInvalid) as caught:
        parse_graph(data, source="x.json")
    assert {i.code.value for i in caught.value.issues} >= {"bad-max-visits", "edge-to-unknown", "entry-unknown"}
    assert str(caught.value).startswith("x.json:")


def test_warnings_never_block_and_errors_always_do() -> None:
    data = graph([node("a"), node("lost")], [edge("a", "PASS", "__end__")])
    assert validate_graph(data).valid
    assert not validate_graph({**data, "entry": "nope"}).valid


def test_capability_warning_only_with_a_team() -> None:
    # SPEC G4: capability-uncarried needs a roster; the full-authority role is named as the fallback
    data = graph([node("a", capability="audit")], [edge("a", "PASS", "__end__")])
    assert codes(data) == []
    assert codes(data, TEAM) == ["capability-uncarried"]
    chief = parse_team({"roles": {"boss": {"fullAuthority": True}, "dev": {"capabilities": ["coding"]}}})
    message = validate_graph(data, chief).warnings[0].message
    assert "'boss' (full authority)" in message


def test_parsed_graph_keeps_defaults_and_order() -> None:
    parsed = parse_graph(
        graph(
            [node("a"), node("b", maxVisits=5)],
            [edge("a", "FAIL", "a"), edge("a", "PASS", "b"), edge("b", "PASS", "__end__")],
        )
    )
    assert parsed.node("a").max_visits == 3 and parsed.node("b").max_visits == 5
    assert parsed.labels("a") == ("FAIL", "PASS")
    assert [e.target for e in parsed.outgoing("a")] == ["a", "b"]
    assert parsed.content_hash() == parse_graph(parsed.to_json()).content_hash()


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (graph([node("a", "cod\x07ing")], [edge("a", "PASS", "__end__")]), "graph.nodes[0].capability"),
        (graph([node("a")], [edge("a", "PA\rSS", "__end__")]), "graph.edges[0].verdict"),
        (graph([node("a")], [edge("a", "PASS", "__end__")], name="t\x9bx"), "graph.name"),
        (
            graph([node("a")], [edge("a", "PASS", "__end__")], policy={"units": {"co\x1bd": 1}}),
            "a key in graph.policy.units",
        ),
        (graph([node("a", extraPrompt="line\x00")], [edge("a", "PASS", "__end__")]), "graph.nodes[0].extraPrompt"),
    ],
)
def test_text_no_shell_can_carry_is_a_schema_error(data: dict[str, object], where: str) -> None:
    # SPEC G3: refused up front with the stable code `schema` (a run would fail half-way otherwise)
    outcome = validate_graph(data)
    assert outcome.graph is None
    assert any(issue.code is IssueCode.SCHEMA and issue.message.startswith(where) for issue in outcome.errors)


def test_free_text_may_span_lines_and_names_may_be_any_printable_text() -> None:
    data = graph([node("étape", extraPrompt="one\n\ttwo\r\n")], [edge("étape", "PASS ✓", "__end__")], entry="étape")
    assert validate_graph({**data, "description": "a\nb"}).valid
