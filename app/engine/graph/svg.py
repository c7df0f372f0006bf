"""The graph picture as inline SVG, drawn on the server, so the web board shows a picture without any script
(SPEC W4). The marks are those of ``draw_mermaid``: gates, decide nodes and checks, the current stage.

The layout is a simple layered one: a stage's rank is its breadth-first distance from the entry, stages a rank
holds sit side by side, edges going down are straight arrows and edges going back (a loop such as review FAIL
-> build, or a stage to itself) are curves on the right side. Stage names, capabilities, checks and verdicts are
a person's text: each passes ``clean`` (the redactor), is cut to a bounded length and escaped for XML, so none of
it can become markup, and the drawing's size is bounded by ``MAX_NODES`` and ``MAX_EDGES``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.engine.graph.model import END, Edge, Graph, Node

MAX_NODES = 60
MAX_EDGES = 240
BOX_W, LINE_H, PAD, H_GAP, V_GAP, LANE = 190, 16, 8, 30, 56, 22
MAX_CHARS, MAX_VERDICT = 26, 22
START_R = 18
# characters XML 1.0 does not allow in a document: shown as the replacement character
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
FILL = {"current": ("#fff8c5", "#9a6700", 4), "gate": ("#ffffff", "#8250df", 3), "plain": ("#ffffff", "#57606a", 1)}


@dataclass(frozen=True)
class Box:
    """Where one stage (or ``__end__``) is drawn: its top-left corner and size."""

    x: float
    y: float
    w: float
    h: float

    @property
    def middle(self) -> float:
        return self.x + self.w / 2


def draw_svg(
    graph: Graph,
    current: str | None = None,
    visits: Mapping[str, int] | None = None,
    clean: Callable[[str], str] = lambda text: text,
) -> str:
    """An ``<svg>`` of every stage and edge; ``clean`` is applied to every text before it is escaped."""
    if len(graph.nodes) > MAX_NODES or len(graph.edges) > MAX_EDGES:
        return _too_large(len(graph.nodes), len(graph.edges))
    lines = max(len(_lines(node, visits, clean)) for node in graph.nodes)
    height = lines * LINE_H + 2 * PAD
    boxes, width = _layout(graph, height)
    back = [edge for edge in graph.edges if boxes[edge.target].y <= boxes[edge.source].y]
    lanes = {id(edge): index for index, edge in enumerate(back)}
    total_w = width + LANE * (len(back) + 1)
    total_h = max(box.y + box.h for box in boxes.values()) + PAD
    entry = boxes[graph.entry]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{total_w:.0f}" height="{total_h:.0f}" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" font-family="system-ui,sans-serif" font-size="12">',
        '<defs><marker id="interlock-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#57606a"/></marker></defs>',
        f'<g class="start"><circle cx="{entry.middle:.0f}" cy="{PAD + START_R}" r="{START_R}" fill="#ddf4ff" '
        f'stroke="#0969da"/><text x="{entry.middle:.0f}" y="{PAD + START_R + 4}" text-anchor="middle">start</text>'
        f"</g>",
        _arrow(f"M{entry.middle:.0f},{PAD + 2 * START_R}L{entry.middle:.0f},{entry.y:.0f}", "start", None),
    ]
    parts += [_stage(node, boxes[node.stage], node.stage == current, visits, clean) for node in graph.nodes]
    if END in boxes:
        parts.append(_end(boxes[END], current == END))
    parts += [_edge(edge, boxes, lanes.get(id(edge)), width, clean) for edge in graph.edges]
    return "".join(parts) + "</svg>"


def _ranks(graph: Graph) -> dict[str, int]:
    """Breadth-first distance from the entry (1 for the entry); unreachable stages after, ``__end__`` last."""
    ranks = {graph.entry: 1}
    queue = deque([graph.entry])
    while queue:
        stage = queue.popleft()
        for edge in graph.edges:
            if edge.source == stage and edge.target != END and edge.target not in ranks:
                ranks[edge.target] = ranks[stage] + 1
                queue.append(edge.target)
    deepest = max(ranks.values())
    for node in graph.nodes:
        ranks.setdefault(node.stage, deepest + 1)
    if any(edge.target == END for edge in graph.edges):
        ranks[END] = max(ranks.values()) + 1
    return ranks


def _layout(graph: Graph, height: float) -> tuple[dict[str, Box], float]:
    """Each stage's box, the rows centred; and the width of the widest row."""
    ranks = _ranks(graph)
    rows: dict[int, list[str]] = {}
    for stage in [node.stage for node in graph.nodes] + ([END] if END in ranks else []):
        rows.setdefault(ranks[stage], []).append(stage)
    width = max(len(row) for row in rows.values()) * (BOX_W + H_GAP) + H_GAP
    boxes: dict[str, Box] = {}
    top = PAD + 2 * START_R + V_GAP / 2
    for rank in sorted(rows):
        row = rows[rank]
        left = (width - len(row) * (BOX_W + H_GAP) + H_GAP) / 2
        for index, stage in enumerate(row):
            tall = 2 * LINE_H if stage == END else height
            boxes[stage] = Box(left + index * (BOX_W + H_GAP), top, BOX_W, tall)
        top += height + V_GAP
    return boxes, width


def _lines(node: Node, visits: Mapping[str, int] | None, clean: Callable[[str], str]) -> list[str]:
    found = [_text(node.stage, clean), _text(node.capability, clean)]
    if node.check is not None:
        found.append("check: " + _text(node.check, clean, MAX_CHARS - 7))
    if node.decides:
        found.append("decide")
    if node.human_gate:
        found.append("human gate")  # a word: an emoji needs a font the viewer may lack
    if visits is not None:
        found.append(f"visits {visits.get(node.stage, 0)}/{node.max_visits}")
    return found


def _stage(node: Node, box: Box, current: bool, visits: Mapping[str, int] | None, clean: Callable[[str], str]) -> str:
    flags = (("gate", node.human_gate), ("decide", node.decides), ("check", node.check is not None))
    marks = ["stage"] + [mark for mark, on in (*flags, ("current", current)) if on]
    fill, stroke, thick = FILL["current" if current else "gate" if node.human_gate else "plain"]
    dash = ' stroke-dasharray="6 3"' if node.human_gate else ""
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="{thick}"{dash}'
    shape = _shape(node, box, paint)
    bold = ' font-weight="bold" class="name"'
    texts = "".join(
        f'<tspan x="{box.middle:.0f}" y="{box.y + PAD + LINE_H * (i + 1) - 4:.0f}"{bold if i == 0 else ""}>'
        f"{line}</tspan>"
        for i, line in enumerate(_lines(node, visits, clean))
    )
    name = _text(node.stage, clean, 200)
    return (
        f'<g class="{" ".join(marks)}" data-stage="{name}"><title>{name}</title>{shape}'
        f'<text text-anchor="middle">{texts}</text></g>'
    )


def _shape(node: Node, box: Box, paint: str) -> str:
    """A hexagon for a decide node, a box with side bars for a check, else a rounded box (Mermaid's shapes)."""
    x, y, w, h = box.x, box.y, box.w, box.h
    if node.decides:
        corners = (
            (x + 12, y),
            (x + w - 12, y),
            (x + w, y + h / 2),
            (x + w - 12, y + h),
            (x + 12, y + h),
            (x, y + h / 2),
        )
        points = " ".join(f"{px:.0f},{py:.0f}" for px, py in corners)
        return f'<polygon points="{points}" {paint}/>'
    rect = f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="6" {paint}/>'
    if node.check is None:
        return rect
    bars = "".join(f'<path d="M{bx:.0f},{y:.0f}v{h:.0f}" stroke="#57606a"/>' for bx in (x + 8, x + w - 8))
    return rect + bars


def _end(box: Box, current: bool) -> str:
    fill, stroke, thick = FILL["current"] if current else ("#ddf4ff", "#0969da", 1)
    return (
        f'<g class="end{" current" if current else ""}" data-stage="{END}"><rect x="{box.x:.0f}" y="{box.y:.0f}" '
        f'width="{box.w:.0f}" height="{box.h:.0f}" rx="{box.h / 2:.0f}" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{thick}"/><text x="{box.middle:.0f}" y="{box.y + box.h / 2 + 4:.0f}" '
        f'text-anchor="middle">{END}</text></g>'
    )


def _edge(edge: Edge, boxes: Mapping[str, Box], lane: int | None, width: float, clean: Callable[[str], str]) -> str:
    """A straight arrow down to a later rank; a curve on the right side back up (or across) to an earlier one."""
    source, target = boxes[edge.source], boxes[edge.target]
    if lane is None:
        sx, sy, tx, ty = source.middle, source.y + source.h, target.middle, target.y
        path = f"M{sx:.0f},{sy:.0f}L{tx:.0f},{ty:.0f}"
        at = ((sx + tx) / 2, (sy + ty) / 2)
    else:
        sx, sy = source.x + source.w, source.y + source.h / 2 + 8
        tx, ty = target.x + target.w, target.y + target.h / 2 - 8
        side = width + LANE * (lane + 1)
        path = f"M{sx:.0f},{sy:.0f}C{side:.0f},{sy:.0f} {side:.0f},{ty:.0f} {tx:.0f},{ty:.0f}"
        at = ((sx + tx) / 8 + side * 0.75, (sy + ty) / 2)
    return _arrow(path, "edge back" if lane is not None else "edge", (_text(edge.verdict, clean, MAX_VERDICT), at))


def _arrow(path: str, kind: str, label: tuple[str, tuple[float, float]] | None) -> str:
    line = f'<path d="{path}" fill="none" stroke="#57606a" stroke-width="1.5" marker-end="url(#interlock-arrow)"/>'
    if label is None:
        return f'<g class="{kind}">{line}</g>'
    text, (x, y) = label
    return (
        f'<g class="{kind}">{line}<text class="verdict" x="{x:.0f}" y="{y + 4:.0f}" text-anchor="middle" '
        f'stroke="#ffffff" stroke-width="4" paint-order="stroke" fill="#1f2328">{text}</text></g>'
    )


def _too_large(nodes: int, edges: int) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="420" height="30" font-size="12">'
        f'<text x="4" y="20">{nodes} stages and {edges} edges: too large to draw here.</text></svg>'
    )


def _text(text: str, clean: Callable[[str], str], limit: int = MAX_CHARS) -> str:
    """A person's text as SVG shows it: cleaned first (a secret is masked whole), cut short, escaped for XML."""
    shown = NOT_XML.sub("\ufffd", clean(text))
    if len(shown) > limit:
        shown = shown[: limit - 1] + "\u2026"
    return shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
