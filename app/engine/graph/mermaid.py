"""The graph picture as a Mermaid flowchart, which GitHub renders in issues and READMEs (SPEC W4).

Stages get neutral ids (``s0``, ``s1``…) because stage names may hold characters Mermaid reads as syntax;
the real names go in quoted labels.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.engine.graph.model import END, Graph, Node

END_ID = "stop_end"
STYLES = (
    "classDef gate stroke:#8250df,stroke-width:3px,stroke-dasharray:6 3",
    "classDef current fill:#fff8c5,stroke:#9a6700,stroke-width:4px",
    "classDef terminal fill:#ddf4ff,stroke:#0969da",
)


def draw_mermaid(graph: Graph, current: str | None = None, visits: Mapping[str, int] | None = None) -> str:
    """A ``flowchart TD`` of every node and edge; gates marked, ``current`` highlighted.

    When ``visits`` is given, every node shows its count against its budget (0 where not listed).
    """
    ids = {node.stage: f"s{index}" for index, node in enumerate(graph.nodes)}
    ids[END] = END_ID
    lines = ["flowchart TD", f'  start(("start")) --> {ids[graph.entry]}']
    lines += [f"  {ids[node.stage]}{_shape(node, _label(node, visits))}" for node in graph.nodes]
    ends = any(edge.target == END for edge in graph.edges)
    if ends:
        lines.append(f'  {END_ID}(["{END}"])')
    for edge in graph.edges:
        lines.append(f'  {ids[edge.source]} -->|"{_escape(edge.verdict)}"| {ids[edge.target]}')
    lines += [f"  {style}" for style in STYLES]
    gates = [ids[node.stage] for node in graph.nodes if node.human_gate]
    if gates:
        lines.append(f"  class {','.join(gates)} gate")
    if ends:
        lines.append(f"  class {END_ID} terminal")
    if current is not None and current in ids:
        lines.append(f"  class {ids[current]} current")
    return "\n".join(lines) + "\n"


def _label(node: Node, visits: Mapping[str, int] | None) -> str:
    parts = [f"<b>{_escape(node.stage)}</b>", _escape(node.capability)]
    if node.check is not None:
        parts.append(f"check: <code>{_escape(node.check)}</code>")
    if node.decides:
        parts.append("decide")
    if node.human_gate:
        parts.append("🔒 human gate")
    if visits is not None:
        parts.append(f"visits {visits.get(node.stage, 0)}/{node.max_visits}")
    return "<br/>".join(parts)


def _shape(node: Node, label: str) -> str:
    if node.decides:
        return '{{"' + label + '"}}'
    if node.check is not None:
        return '[["' + label + '"]]'
    return f'["{label}"]'


def _escape(text: str) -> str:
    """Mermaid label text: quotes and markup characters as entity codes, newlines as breaks."""
    table = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "&": "#amp;", "|": "#124;", "\n": "<br/>", "#": "#35;"}
    return "".join(table.get(char, char) for char in text)
