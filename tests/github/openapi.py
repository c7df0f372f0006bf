"""Checks requests against GitHub's own OpenAPI description (path, method, required body fields).

The description is the part of it the repository carries (tests/fixtures/github/openapi/): the operations
the stand-in serves, verbatim, with what they refer to. ``python -m tests.fixtures.refresh`` remakes it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import httpx

from tests.helpers import FIXTURES

SPEC = FIXTURES / "github" / "openapi" / "api.github.com.json"
GREEDY = {"ref", "path"}  # parameters that may hold slashes (heads/feature/x, docs/a.md)


@cache
def operations() -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
    found: list[tuple[int, re.Pattern[str], str, dict[str, Any]]] = []
    spec = json.loads(SPEC.read_text())
    for template, item in spec["paths"].items():
        pattern = re.sub(r"\{(\w+)\}", lambda m: "(.+)" if m.group(1) in GREEDY else "([^/]+)", template)
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                found.append((template.count("{"), re.compile(f"^{pattern}$"), method.upper(), operation))
    found.sort(key=lambda entry: entry[0])  # the fewest parameters first: the most specific template wins
    return [(pattern, method, operation) for _, pattern, method, operation in found]


def problems(request: httpx.Request, base: str = "") -> list[str]:
    """What is wrong with ``request`` according to GitHub's description; empty when nothing is."""
    path = request.url.path.removeprefix(base)
    matches = [(p, op) for p, method, op in operations() if method == request.method and p.match(path)]
    if not matches:
        return [
            f"{request.method} {path} is not in GitHub's REST description, or not in the part of it in"
            " tests/fixtures/github/openapi (python -m tests.fixtures.refresh adds what the stand-in serves)"
        ]
    operation = matches[0][1]
    schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    if not schema or not request.content:
        return []
    body = json.loads(request.content)
    missing = [field for field in schema.get("required", []) if field not in body]
    unknown = [field for field in body if "properties" in schema and field not in schema["properties"]]
    found = []
    if missing:
        found.append(f"{request.method} {path}: missing required {missing}")
    if unknown:
        found.append(f"{request.method} {path}: fields not in the description {unknown}")
    return found


def unknown_query(request: httpx.Request, base: str = "") -> list[str]:
    """The query parameters of ``request`` that GitHub's description of its operation does not name (``problems``
    checks the path and the body; a listing's ``per_page`` and ``cursor`` are in the query)."""
    path = request.url.path.removeprefix(base)
    spec = json.loads(SPEC.read_text())
    for pattern, method, operation in operations():
        if method == request.method and pattern.match(path):
            named = set()
            for parameter in operation.get("parameters", []):
                if "$ref" in parameter:
                    parameter = spec["components"]["parameters"][parameter["$ref"].rsplit("/", 1)[1]]
                if parameter.get("in") == "query":
                    named.add(parameter["name"])
            return sorted(set(request.url.params) - named)
    return [f"{request.method} {path} is not in GitHub's REST description"]
