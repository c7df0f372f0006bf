"""The graph picture (SPEC W4)."""

from __future__ import annotations

import re

from app.engine.graph.mermaid import draw_mermaid
from app.engine.graph.validate import parse_graph
from tests.helpers import edge, graph, node

G = parse_graph(
    graph(
        [node("plan", humanGate=True), node('say "hi" <x>|#'), node("test", check="pytest")],
        [
            edge("plan", "PASS", 'say "hi" <x>|#'),
            edge('say "hi" <x>|#', "PASS", "test"),
            edge("test", "FAIL", 'say "hi" <x>|#'),
            edge("test", "PASS", "__end__"),
        ],
        entry="plan",
    )
)


def test_every_node_and_edge_is_drawn_with_its_label() -> None:
    # SPEC W4
    text = draw_mermaid(G)
    assert text.startswith("flowchart TD\n")
    assert len(re.findall(r"^  s\d+\W", text, re.M)) >= 3
    edges = re.findall(r'^  (\S+) -->\|"([^"]*)"\| (\S+)$', text, re.M)
    assert edges == [("s0", "PASS", "s1"), ("s1", "PASS", "s2"), ("s2", "FAIL", "s1"), ("s2", "PASS", "stop_end")]
    assert 'stop_end(["__end__"])' in text


def test_gates_entry_and_current_are_marked() -> None:
    # SPEC W4
    text = draw_mermaid(G, current="test", visits={"plan": 1, "test": 2})
    assert "class s0 gate" in text and "class s2 current" in text
    assert 'start(("start")) --> s0' in text
    assert "visits 1/3" in text and "visits 2/3" in text and "visits 0/3" in text


def test_names_are_escaped_so_mermaid_reads_them_as_text() -> None:
    text = draw_mermaid(G)
    assert "say #quot;hi#quot; #lt;x#gt;#124;#35;" in text
    assert 'say "hi"' not in text


def test_no_current_class_without_current() -> None:
    assert not re.search(r"^  class \S+ current$", draw_mermaid(G), re.M)
