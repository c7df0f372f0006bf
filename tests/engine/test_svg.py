"""The graph picture as inline SVG, drawn on the server for the web board (SPEC W4)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from app.engine.graph import svg
from app.engine.graph.svg import draw_svg
from app.engine.graph.validate import parse_graph
from tests.helpers import edge, graph, node

NS = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert(1)</script> & "x"'
G = parse_graph(
    graph(
        [node("plan", humanGate=True), node("build"), node("review", decide=True), node(EVIL, check="make <t>")],
        [
            edge("plan", "PASS", "build"),
            edge("build", "PASS", "review"),
            edge("review", "FAIL", "build"),
            edge("review", "PASS", EVIL),
            edge(EVIL, "PASS", "__end__"),
            edge(EVIL, "<b>FAIL</b>", EVIL),
        ],
        entry="plan",
    )
)


def stages(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-stage", ""): g for g in root.iter(f"{NS}g") if "stage" in (g.get("class") or "").split()}


def words(element: ET.Element) -> str:
    return " ".join("".join(element.itertext()).split())


def test_one_box_per_stage_with_its_name_capability_and_visits() -> None:
    # SPEC W4
    root = ET.fromstring(draw_svg(G, current="review", visits={"plan": 1, "build": 2}))
    assert root.tag == f"{NS}svg"
    boxes = stages(root)
    assert set(boxes) == {"plan", "build", "review", EVIL}
    assert "visits 1/3" in words(boxes["plan"]) and "visits 2/3" in words(boxes["build"])
    assert "visits 0/3" in words(boxes["review"]) and "coding" in words(boxes["build"])
    assert [g.get("data-stage") for g in root.iter(f"{NS}g") if g.get("class") == "end"] == ["__end__"]
    assert [g for g in root.iter(f"{NS}g") if g.get("class") == "start"]


def test_marks_gates_decide_nodes_checks_and_the_current_stage() -> None:
    # SPEC W4: the marks of draw_mermaid
    boxes = stages(ET.fromstring(draw_svg(G, current="review")))
    assert "gate" in boxes["plan"].get("class", "").split() and "human gate" in words(boxes["plan"])
    assert boxes["review"].get("class", "").split() == ["stage", "decide", "current"]
    assert boxes[EVIL].get("class", "").split() == ["stage", "check"] and "check: make <t>" in words(boxes[EVIL])
    assert [s for s, g in boxes.items() if "current" in g.get("class", "")] == ["review"]
    assert not any("current" in g.get("class", "") for g in stages(ET.fromstring(draw_svg(G))).values())


def test_an_arrow_and_a_verdict_label_per_edge_loops_drawn_back_on_the_side() -> None:
    root = ET.fromstring(draw_svg(G))
    edges = [g for g in root.iter(f"{NS}g") if (g.get("class") or "").startswith("edge")]
    labels = [words(g) for g in edges]
    assert labels == ["PASS", "PASS", "FAIL", "PASS", "PASS", "<b>FAIL</b>"]
    back = [words(g) for g in edges if g.get("class") == "edge back"]
    assert back == ["FAIL", "<b>FAIL</b>"]  # review FAIL -> build, and the check's loop onto itself
    assert all(g.find(f"{NS}path") is not None for g in edges)


def test_every_text_is_escaped_and_cleaned_and_no_script_element_exists() -> None:
    text = draw_svg(G, clean=lambda value: value.replace("alert", "[redacted]"))
    root = ET.fromstring(text)
    assert "&lt;script&gt;[redacted](1)&lt;/script&gt;" in text and "<script" not in text and "alert" not in text
    assert not [e for e in root.iter() if e.tag.removeprefix(NS) in ("script", "foreignObject", "b")]
    assert all(not name.startswith("on") for e in root.iter() for name in e.attrib)
    long = "x" * 500
    odd = parse_graph(graph([node(long, check="make\x01")], [edge(long, "PASS", "__end__")], entry=long))
    drawn = draw_svg(odd)
    assert ET.fromstring(drawn) is not None and "\x01" not in drawn and "x" * 201 not in drawn


def test_the_size_is_bounded() -> None:
    many = parse_graph(
        graph(
            [node(f"n{i}") for i in range(svg.MAX_NODES + 1)],
            [edge(f"n{i}", "PASS", f"n{i + 1}") for i in range(svg.MAX_NODES)]
            + [edge(f"n{svg.MAX_NODES}", "PASS", "__end__")],
            entry="n0",
        )
    )
    drawn = draw_svg(many)
    assert "too large to draw" in words(ET.fromstring(drawn)) and len(drawn) < 1000
    assert len(draw_svg(G)) < 20_000
