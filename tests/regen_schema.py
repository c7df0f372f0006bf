"""Rewrite graphs/graph.schema.json from the model: ``python -m tests.regen_schema``."""

import json

from app.engine.graph.schema import graph_json_schema
from tests.helpers import GRAPHS

(GRAPHS / "graph.schema.json").write_text(json.dumps(graph_json_schema(), indent=2) + "\n")
