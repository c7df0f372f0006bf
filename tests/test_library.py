"""The graph library and its JSON Schema (SPEC G1, G6)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from app.engine.errors import GraphInvalid
from app.engine.graph.contract import ContractKind, verdict_contract
from app.engine.graph.model import END
from app.engine.graph.schema import graph_json_schema
from app.graphset import graph_files, load_graph, load_graphset
from tests.helpers import FIXTURES, GRAPHS

LIBRARY = graph_files(GRAPHS)
SCHEMA = json.loads((GRAPHS / "graph.schema.json").read_text())


def test_library_has_the_promised_graphs() -> None:
    names = {load_graph(path).name for path in LIBRARY}
    assert names >= {"feature", "bugfix", "triage", "release", "supervision", "quote-edit"}


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.stem)
def test_every_library_graph_validates_without_warnings(path: Path) -> None:
    # SPEC G6: graphs are validated where they are stored, here in the project's own CI
    from app.graphset import validate_file

    report = validate_file(path)
    assert report.validation.valid, report.to_json()
    assert report.validation.warnings == ()


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.stem)
def test_every_library_graph_matches_the_json_schema(path: Path) -> None:
    # SPEC G1: a JSON Schema for the format ships with the project
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(path.read_text()))


def test_shipped_schema_is_the_generated_one() -> None:
    assert graph_json_schema() == SCHEMA, "run: python -m tests.regen_schema"


@pytest.mark.parametrize("code", ["schema", "bad-max-visits", "edge-verdict-missing", "reserved-name"])
def test_schema_refuses_what_it_can_express(code: str) -> None:
    data = json.loads((FIXTURES / "graphs" / "errors" / f"{code}.json").read_text())
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data))


def test_schema_refuses_reserved_verdicts_in_any_case() -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    base = json.loads((GRAPHS / "basics" / "quote-edit.json").read_text())
    for label in ["needs_input", "Needs_Upstream", "NEEDS_INPUT"]:
        base["edges"][0]["verdict"] = label
        assert list(validator.iter_errors(base)), label


def test_feature_graph_has_the_promised_shape() -> None:
    graph = load_graphset(GRAPHS / "delivery")["feature"]
    assert graph.node(graph.entry).human_gate
    check = next(node for node in graph.nodes if node.check)
    assert {e.verdict for e in graph.outgoing(check.stage)} == {"PASS", "FAIL"}
    review = graph.node("review")
    assert {(e.verdict, e.target) for e in graph.outgoing("review")} == {("PASS", END), ("FAIL", "implement")}
    assert verdict_contract(graph, review.stage).kind is ContractKind.DEFAULT_PASS


def test_triage_has_no_pass_and_a_strict_or_selection_contract() -> None:
    graph = load_graphset(GRAPHS / "operations")["triage"]
    assert "PASS" not in graph.labels(graph.entry)
    assert verdict_contract(graph, graph.entry).kind in (ContractKind.STRICT, ContractKind.SELECTION)


def test_supervision_uses_its_verdicts() -> None:
    graph = load_graphset(GRAPHS / "supervision")["supervision"]
    labels = {label for node in graph.nodes for label in graph.labels(node.stage)}
    assert labels >= {"NOTHING_NEW", "DELTA", "NONE", "PROPOSALS"}
    assert [n.stage for n in graph.nodes] == ["observe", "detect", "critique", "emit"]


def test_smallest_graph_is_one_gated_node() -> None:
    graph = load_graph(GRAPHS / "basics" / "quote-edit.json")
    assert len(graph.nodes) == 1 and graph.nodes[0].human_gate
    assert [(e.verdict, e.target) for e in graph.edges] == [("PASS", END)]


def test_release_gates_before_the_end() -> None:
    graph = load_graphset(GRAPHS / "operations")["release"]
    last = next(e.source for e in graph.edges if e.target == END)
    assert graph.node(last).human_gate


def test_graphsets_are_folders_of_graphs_with_unique_names(tmp_path: Path) -> None:
    # SPEC U2: graphs live in graphsets (folders of graph files); one name means one graph
    graphs = load_graphset(GRAPHS)
    assert {"feature", "bugfix", "triage", "release", "supervision", "quote-edit"} <= set(graphs)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    feature = (GRAPHS / "delivery" / "feature.json").read_text()
    (tmp_path / "a" / "feature.json").write_text(feature)
    (tmp_path / "b" / "copy.json").write_text(feature)
    with pytest.raises(GraphInvalid, match="graph name 'feature' is also used by"):
        load_graphset(tmp_path)
