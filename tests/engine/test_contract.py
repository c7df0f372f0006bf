"""Verdict contracts derived from edges (SPEC V1–V4, V6, V8)."""

from __future__ import annotations

from app.engine.graph.contract import ContractKind, reserved_verdicts_text, verdict_contract
from app.engine.graph.validate import parse_graph
from tests.helpers import edge, graph, node


def build(edges: list[dict[str, str]], **extra: object) -> object:
    stages = {e["from"] for e in edges} | {e["to"] for e in edges if e["to"] != "__end__"} | {"a"}
    nodes = [node(s, **(extra if s == "a" else {})) for s in sorted(stages)]
    return parse_graph(graph(nodes, edges))


def test_labels_are_distinct_in_edge_order_without_catch_all() -> None:
    # SPEC V1
    g = build([edge("a", "FAIL", "b"), edge("a", "*", "b"), edge("a", "PASS", "__end__"), edge("b", "PASS", "__end__")])
    assert g.labels("a") == ("FAIL", "PASS")  # type: ignore[attr-defined]


def test_pass_only_node_gets_no_contract() -> None:
    # SPEC V2
    g = build([edge("a", "PASS", "__end__")])
    terms = verdict_contract(g, "a")  # type: ignore[arg-type]
    assert terms.kind is ContractKind.NONE and terms.text == "" and not terms.verdict_required


def test_node_without_edges_gets_no_contract() -> None:
    # SPEC V2
    g = build([edge("a", "PASS", "b")])
    assert verdict_contract(g, "b").kind is ContractKind.NONE  # type: ignore[arg-type]


def test_several_labels_with_pass_list_them_and_default_to_pass() -> None:
    # SPEC V3
    g = build([edge("a", "PASS", "__end__"), edge("a", "FAIL", "a")])
    terms = verdict_contract(g, "a")  # type: ignore[arg-type]
    assert terms.kind is ContractKind.DEFAULT_PASS and terms.labels == ("PASS", "FAIL")
    assert "PASS, FAIL" in terms.text and "read as PASS" in terms.text and not terms.verdict_required


def test_node_without_pass_gets_a_strict_contract() -> None:
    # SPEC V4
    g = build([edge("a", "BUG", "__end__"), edge("a", "FEATURE", "__end__")])
    terms = verdict_contract(g, "a")  # type: ignore[arg-type]
    assert terms.kind is ContractKind.STRICT and terms.verdict_required
    assert "BUG, FEATURE" in terms.text and "required" in terms.text and "PASS" not in terms.text


def test_decide_node_gets_the_closed_list() -> None:
    # SPEC V8
    g = build([edge("a", "YES", "__end__"), edge("a", "NO", "__end__")], decide=True)
    terms = verdict_contract(g, "a")  # type: ignore[arg-type]
    assert terms.kind is ContractKind.SELECTION and terms.labels == ("YES", "NO") and "YES, NO" in terms.text


def test_check_node_has_no_model_contract() -> None:
    # SPEC V7
    g = build([edge("a", "PASS", "__end__"), edge("a", "FAIL", "a")], check="pytest -q")
    assert verdict_contract(g, "a").kind is ContractKind.CHECK  # type: ignore[arg-type]


def test_reserved_verdicts_are_explained() -> None:
    # SPEC V6
    text = reserved_verdicts_text()
    assert "NEEDS_INPUT" in text and "NEEDS_UPSTREAM" in text and "```request" in text
