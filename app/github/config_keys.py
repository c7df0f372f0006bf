"""Unknown keys of ``.github/interlock.yml``: the key a misspelt one probably meant, at its own level, and the
file without them, so that ``interlock config check`` goes on to check the graphs against the teams (issue 28).

Why: pydantic says only "Extra inputs are not permitted", and a refused file stopped the check there, so a file
with a misspelt key and a capability nobody carries named only the key. The graph validator says "did you mean";
the configuration now says it too, with the keys allowed where the unknown one stands (read from the JSON Schema
the configuration ships, so a nested key is matched against its neighbours, never the whole file's keys).
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

UNKNOWN = "extra_forbidden"  # pydantic's error type of a key the model does not have


def suggestion(loc: tuple[int | str, ...], schema: dict[str, Any]) -> str:
    """`` (did you mean `concurrency`?)`` for the unknown key at ``loc`` of a file of ``schema`` (the model's JSON
    Schema), or '' when none is close."""
    known = sorted(_known_at(loc[:-1], schema))
    close = difflib.get_close_matches(str(loc[-1]), known, n=1) if loc else []
    return f" (did you mean `{close[0]}`?)" if close else ""


def without_unknown(data: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """``data`` with each unknown key of ``errors`` removed (a role given in a mapping named by its key)."""
    cleaned = copy.deepcopy(data)
    for problem in errors:
        if problem["type"] != UNKNOWN or not problem["loc"]:
            continue
        node: Any = cleaned
        for part in problem["loc"][:-1]:
            if isinstance(part, int) and isinstance(node, dict) and 0 <= part < len(node):
                part = list(node)[part]
            node = node.get(part) if isinstance(node, dict) else _item(node, part)
        if isinstance(node, dict):
            node.pop(problem["loc"][-1], None)
    return cleaned


def _item(node: Any, part: int | str) -> Any:
    return node[part] if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node) else None


def _known_at(path: tuple[int | str, ...], schema: dict[str, Any]) -> set[str]:
    """The property names the schema allows at ``path`` (every branch of an ``anyOf`` explored)."""
    defs = schema.get("$defs", {})
    nodes = [schema]
    for part in path:
        nodes = [child for node in nodes for child in _children(_resolved(node, defs), part, defs)]
    return {name for node in nodes for name in _resolved(node, defs).get("properties", {})}


def _resolved(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(defs.get(ref.removeprefix("#/$defs/"), {}))
    return node


def _children(node: dict[str, Any], part: int | str, defs: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        found += _children(_resolved(branch, defs), part, defs)
    if isinstance(part, str) and part in node.get("properties", {}):
        found.append(node["properties"][part])
    elif isinstance(part, str) and isinstance(node.get("additionalProperties"), dict):
        found.append(node["additionalProperties"])
    elif isinstance(part, str):  # a name the schema's patterns allow (a team's, a role's in a mapping)
        found += [child for child in node.get("patternProperties", {}).values() if isinstance(child, dict)]
    elif isinstance(part, int) and isinstance(node.get("items"), dict):
        found.append(node["items"])
    return found
