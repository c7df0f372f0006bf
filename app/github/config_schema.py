"""The JSON Schema of ``.github/interlock.yml``, generated from ``RepoConfig`` so that the two never drift
(issue 13): editors complete and check the file with it. The shipped copy is ``app/github/interlock.schema.json``
(package data); a test checks it equals what this module generates (``python -m tests.regen_config_schema``).
What the schema cannot say (one full-authority role per team, one team that accepts requests, ``extends``
resolving) is the parser's alone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from app.github.config import RepoConfig

SCHEMA_ID = "https://interlock.dev/schemas/interlock.schema.json"
SCHEMA_FILE = Path(__file__).with_name("interlock.schema.json")


def config_json_schema() -> dict[str, Any]:
    schema = RepoConfig.model_json_schema(by_alias=True, mode="validation")
    defs = schema["$defs"]
    teams = next(branch for branch in schema["properties"]["teams"]["anyOf"] if branch.get("type") == "object")
    teams["additionalProperties"] = False  # a team name that breaks the pattern is refused, not ignored
    body = copy.deepcopy(defs["Role"])  # a role given in a mapping takes its name from the key
    del body["properties"]["name"]
    body["required"] = [key for key in body.get("required", []) if key != "name"]
    body["title"] = "RoleByName"
    defs["RoleByName"] = body
    roles = defs["TeamConfig"]["properties"]["roles"]
    array = {"type": "array", "items": roles.pop("items")}
    roles.pop("type")
    roles["anyOf"] = [array, {"type": "object", "additionalProperties": {"$ref": "#/$defs/RoleByName"}}]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "Interlock repository configuration (.github/interlock.yml)",
    }
