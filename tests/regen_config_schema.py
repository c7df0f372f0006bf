"""Rewrite app/github/interlock.schema.json from the model: ``python -m tests.regen_config_schema``."""

import json

from app.github.config_schema import SCHEMA_FILE, config_json_schema

SCHEMA_FILE.write_text(json.dumps(config_json_schema(), indent=2) + "\n")
