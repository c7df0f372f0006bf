"""The JSON Schema of graph files, generated from the graph model so that the two never drift (SPEC G1).

The shipped copy is ``graphs/graph.schema.json``; a test checks it equals what this module generates.
Rules that the schema can state (required labels, ``maxVisits`` ≥ 1, no unknown keys) are tightened
here; rules it cannot (unique labels per node, reachable termination) are the validator's alone.
"""

from __future__ import annotations

from typing import Any

from app.engine.graph.model import END, RESERVED_VERDICTS, Graph

SCHEMA_ID = "https://interlock.dev/schemas/graph.schema.json"


def graph_json_schema() -> dict[str, Any]:
    schema = Graph.model_json_schema(by_alias=True, mode="validation")
    defs = schema["$defs"]
    defs["Node"]["properties"]["maxVisits"]["minimum"] = 1
    defs["Node"]["properties"]["stage"]["not"] = {"const": END}
    edge = defs["Edge"]
    edge["properties"]["verdict"] = {
        "type": "string",
        "minLength": 1,
        "pattern": r"\S",
        "not": {"pattern": _reserved_pattern()},
        "description": "Verdict label; '*' is the catch-all. NEEDS_INPUT and NEEDS_UPSTREAM are reserved.",
    }
    edge["required"] = ["from", "verdict", "to"]
    schema["properties"]["entry"]["minLength"] = 1
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "Interlock workflow graph",
        "description": "A workflow as data: nodes (steps) and edges routed on verdict labels.",
    }


def _reserved_pattern() -> str:
    """The reserved verdicts in any case. ECMA-262 patterns have no inline case flag, so spell it out."""

    def anycase(word: str) -> str:
        return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)

    words = "|".join(anycase(word) for word in sorted(RESERVED_VERDICTS))
    return rf"^\s*({words})\s*$"
