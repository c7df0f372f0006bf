"""Static validation of graphs (SPEC G2–G6).

The validator never stops at the first problem: it reports every error and warning, each with a code,
the stage or edge index concerned and a readable message. The codes are an interface people script
against, so they are an enum whose values never change.

It works in two passes over the raw JSON. A *lenient* pass reads whatever names and labels are there,
so that structural checks (unknown targets, duplicate labels, reachability) still run when some item is
malformed; a *strict* pass parses each item with the pydantic models and reports schema problems. Only a
graph with no error becomes a ``Graph``.
"""

from __future__ import annotations

import difflib
import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from app.engine.errors import GraphInvalid
from app.engine.graph.cost_findings import cost_issues
from app.engine.graph.model import END, RESERVED_VERDICTS, Edge, GateRules, Graph, Node, Policy, distinct_labels
from app.engine.graph.names import unfit_text
from app.engine.graph.reachability import flow_issues
from app.engine.graph.validation_findings import WARNING_CODES, Issue, IssueCode, Validation
from app.engine.team import Team


class _Header(BaseModel, strict=True, extra="forbid"):
    """The top level of a graph file; nodes and edges are checked one by one afterwards."""

    name: str = Field(min_length=1)
    description: str = ""
    entry: str = ""
    nodes: list[Any]
    edges: list[Any]
    policy: Policy = Field(default_factory=Policy)
    gates: GateRules = Field(default_factory=GateRules)  # SPEC H6


class _Loose(NamedTuple):
    """What the lenient pass could read of one edge: ``None`` where the field is absent or mistyped."""

    position: int
    source: str | None
    verdict: str | None
    target: str | None


@dataclass
class _Findings:
    issues: list[Issue] = field(default_factory=list)

    def add(self, code: IssueCode, message: str, stage: str | None = None, edge: int | None = None) -> None:
        self.issues.append(Issue(code, message, stage, edge))


def parse_graph(data: Any, team: Team | None = None, source: str = "graph") -> Graph:
    """The graph described by ``data``; raises ``GraphInvalid`` listing every error otherwise."""
    outcome = validate_graph(data, team)
    if outcome.graph is None:
        raise GraphInvalid(outcome.errors, source)
    return outcome.graph


def validate_graph(data: Any, team: Team | None = None) -> Validation:
    """Every issue of ``data`` as a graph (SPEC G3, G4). Never raises, whatever ``data`` is."""
    with _collector_paused():
        return _validate(data, team)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while validating.

    Validation allocates tens of thousands of small objects and creates no reference cycles, so every
    collection it triggers is wasted work that also scans the caller's heap: with it, time grew faster than
    the graph. Only the caller that turned the collector off turns it back on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _validate(data: Any, team: Team | None) -> Validation:
    found = _Findings()
    if not isinstance(data, dict):
        found.add(IssueCode.SCHEMA, f"a graph must be a JSON object, not {_json_type(data)}")
        return Validation(tuple(found.issues), None)
    header = _check_header(data, found)
    found.issues.extend(Issue(IssueCode.SCHEMA, message, stage) for message, stage in unfit_text(data))
    raw_nodes = _list_at(data, "nodes")
    raw_edges = _list_at(data, "edges")
    nodes = _check_nodes(raw_nodes, found)
    stages = _stage_names(raw_nodes)
    loose = _loose_edges(raw_edges)
    edges = _check_edges(raw_edges, loose, stages, found)
    entry = data.get("entry") if isinstance(data.get("entry"), str) else None
    _check_entry(data, entry, stages, found)
    found.issues.extend(flow_issues(entry, stages, loose))
    _check_nodes_against_edges(nodes, loose, team, found)
    issues = tuple(found.issues)
    if header is None or any(issue.is_error for issue in issues):
        return Validation(issues, None)
    graph = Graph.model_construct(
        name=header.name,
        description=header.description,
        entry=header.entry,
        nodes=tuple(nodes),
        edges=tuple(edges),
        policy=header.policy,
        gates=header.gates,
    )
    return Validation((*issues, *cost_issues(graph)), graph)


def _check_header(data: dict[str, Any], found: _Findings) -> _Header | None:
    try:
        return _Header.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            found.add(IssueCode.SCHEMA, _schema_message("graph", err, _TOP_KEYS))
        return None


def _check_nodes(raw_nodes: list[Any], found: _Findings) -> list[Node]:
    for raw in raw_nodes:
        if not isinstance(raw, dict):
            continue
        stage = raw.get("stage") if isinstance(raw.get("stage"), str) else None
        visits = raw.get("maxVisits")
        if isinstance(visits, int) and not isinstance(visits, bool) and visits < 1:
            found.add(IssueCode.BAD_MAX_VISITS, f"node {stage!r}: maxVisits must be at least 1, got {visits}", stage)
        if stage == END:
            found.add(IssueCode.RESERVED_NAME, f"{END!r} is reserved for the end of a run: no node may use it", stage)
    nodes: list[Node] = _parse_items(raw_nodes, _NODE_LIST, "node", found)
    for node in nodes:
        if node.check is not None and node.decides:
            found.add(
                IssueCode.SCHEMA, f"node {node.stage!r}: takes its verdict from check or decide, not both", node.stage
            )
    return nodes


def _parse_items(raw_items: list[Any], adapter: TypeAdapter[Any], kind: str, found: _Findings) -> list[Any]:
    """Parse nodes or edges in one call; item by item only when something is wrong, to report each problem."""
    try:
        return list(adapter.validate_python(raw_items))
    except ValidationError:
        pass
    model = Node if kind == "node" else Edge
    keys = _NODE_KEYS if kind == "node" else _EDGE_KEYS
    parsed = []
    for index, raw in enumerate(raw_items):
        stage = raw.get("stage") if kind == "node" and isinstance(raw, dict) else None
        stage = stage if isinstance(stage, str) else None
        place = {"stage": stage} if kind == "node" else {"edge": index}
        if not isinstance(raw, dict):
            found.add(IssueCode.SCHEMA, f"{kind} {index} must be an object, not {_json_type(raw)}", **place)
            continue
        try:
            parsed.append(model.model_validate(raw))
        except ValidationError as exc:
            where = f"node {stage!r}" if stage else f"{kind} {index}"
            for err in exc.errors():
                found.add(IssueCode.SCHEMA, _schema_message(where, err, keys), **place)
    return parsed


def _stage_names(raw_nodes: list[Any]) -> list[str]:
    """Every stage name the file declares, malformed nodes included, so edges to them are not 'unknown'.

    A node misnamed ``__end__`` is left out: it is reported as a reserved name, and edges to ``__end__``
    still mean the end of the run.
    """
    return [
        raw["stage"]
        for raw in raw_nodes
        if isinstance(raw, dict) and isinstance(raw.get("stage"), str) and raw["stage"] != END
    ]


def _loose_edges(raw_edges: list[Any]) -> list[_Loose]:
    return [
        _Loose(index, _text(raw.get("from")), _text(raw.get("verdict")), _text(raw.get("to")))
        if isinstance(raw, dict)
        else _Loose(index, None, None, None)
        for index, raw in enumerate(raw_edges)
    ]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _check_edges(raw_edges: list[Any], loose: list[_Loose], stages: list[str], found: _Findings) -> list[Edge]:
    known = set(stages)
    for edge in loose:
        _check_edge_ends(edge, known, found)
        _check_edge_label(edge, raw_edges[edge.position], found)
    _check_duplicate_labels(loose, found)
    edges: list[Edge] = _parse_items(raw_edges, _EDGE_LIST, "edge", found)
    return edges


def _check_edge_ends(edge: _Loose, known: set[str], found: _Findings) -> None:
    if edge.source is not None and edge.source not in known:
        found.add(
            IssueCode.EDGE_FROM_UNKNOWN,
            f"edge {edge.position} starts from {edge.source!r}, which is not a node{_hint(edge.source, known)}",
            edge.source,
            edge.position,
        )
    if edge.target is not None and edge.target not in known and edge.target != END:
        found.add(
            IssueCode.EDGE_TO_UNKNOWN,
            f"edge {edge.position} goes to {edge.target!r}, which is neither a node nor {END!r}"
            f"{_hint(edge.target, known)}",
            edge.source,
            edge.position,
        )


def _check_edge_label(edge: _Loose, raw: Any, found: _Findings) -> None:
    if not isinstance(raw, dict) or (edge.verdict and edge.verdict[0] not in _SUSPECT_START):
        return
    label = raw.get("verdict")
    if label is None or (isinstance(label, str) and not label.strip()):
        found.add(
            IssueCode.EDGE_VERDICT_MISSING,
            f"edge {edge.position} ({edge.source} -> {edge.target}) has no verdict label",
            edge.source,
            edge.position,
        )
    elif isinstance(label, str) and label.strip().upper() in RESERVED_VERDICTS:
        found.add(
            IssueCode.RESERVED_NAME,
            f"edge {edge.position}: {label!r} is a reserved verdict, valid at every node; it may not label an edge",
            edge.source,
            edge.position,
        )


def _check_duplicate_labels(loose: list[_Loose], found: _Findings) -> None:
    first: dict[tuple[str, str], int] = {}
    for edge in loose:
        if edge.source is None or not edge.verdict or not edge.verdict.strip():
            continue
        key = (edge.source, edge.verdict.casefold())
        if key in first:
            found.add(
                IssueCode.DUPLICATE_VERDICT,
                f"node {edge.source!r} has two edges for verdict {edge.verdict!r} (edges {first[key]} and "
                f"{edge.position}; labels compare without regard to case)",
                edge.source,
                edge.position,
            )
        else:
            first[key] = edge.position


def _check_entry(data: dict[str, Any], entry: str | None, stages: list[str], found: _Findings) -> None:
    seen: set[str] = set()
    for stage in stages:
        if stage in seen:
            found.add(IssueCode.DUPLICATE_STAGE, f"stage {stage!r} is declared more than once", stage)
        seen.add(stage)
    if "entry" not in data or (entry is not None and not entry.strip()):
        found.add(IssueCode.ENTRY_MISSING, "the graph has no entry: name the stage where runs begin")
    elif entry is not None and entry not in seen:
        found.add(IssueCode.ENTRY_UNKNOWN, f"entry {entry!r} is not a node{_hint(entry, seen)}", entry)


def _check_nodes_against_edges(nodes: list[Node], loose: list[_Loose], team: Team | None, found: _Findings) -> None:
    verdicts: dict[str, list[str]] = {}
    for edge in loose:
        if edge.source is not None and edge.verdict:
            verdicts.setdefault(edge.source, []).append(edge.verdict)
    for node in nodes:
        labels = distinct_labels(verdicts.get(node.stage, ()))
        if node.decides and len(labels) < 2:
            found.add(
                IssueCode.POINTLESS_DECIDE,
                f"node {node.stage!r} uses decide with {len(labels)} label(s): a selector with fewer than two "
                "answers only adds a call and a failure mode",
                node.stage,
            )
        if team is not None and team.carrier(node.capability) is None:
            chief = team.full_authority_role()
            fallback = f"role {chief.name!r} (full authority) will do it" if chief else "no role can do it"
            found.add(
                IssueCode.CAPABILITY_UNCARRIED,
                f"no role of team {team.name!r} carries capability {node.capability!r}: {fallback}",
                node.stage,
            )


_HINT_LIMIT = 500
_SUSPECT_START = frozenset(" \t\r\nNn")  # labels that might be blank or reserved: checked in full
_NODE_LIST: TypeAdapter[list[Node]] = TypeAdapter(list[Node])
_EDGE_LIST: TypeAdapter[list[Edge]] = TypeAdapter(list[Edge])
_TOP_KEYS = tuple(_Header.model_fields)
_NODE_KEYS = tuple(f.alias or name for name, f in Node.model_fields.items())
_EDGE_KEYS = tuple(f.alias or name for name, f in Edge.model_fields.items())


def _schema_message(where: str, err: Any, known_keys: Iterable[str]) -> str:
    path = ".".join(str(part) for part in err["loc"])
    if err["type"] == "extra_forbidden":
        key = str(err["loc"][-1])
        return f"{where}: unknown key {key!r}{_hint(key, known_keys)}"
    if err["type"] == "missing":
        return f"{where}: missing required key {path!r}"
    return f"{where}: {path}: {err['msg']}"


def _hint(word: str, candidates: Iterable[str]) -> str:
    """A 'did you mean' suggestion; skipped for huge graphs, where it would cost more than it helps."""
    pool = list(candidates)
    if len(pool) > _HINT_LIMIT:
        return ""
    close = difflib.get_close_matches(word, pool, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _list_at(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


__all__ = ["WARNING_CODES", "Issue", "IssueCode", "Validation", "parse_graph", "validate_graph"]
