"""The engine is a functional core: no module of app/engine may import anything that does I/O."""

from __future__ import annotations

import ast

from tests.helpers import ROOT

ENGINE = ROOT / "app" / "engine"
ALLOWED = {
    "__future__",
    "typing",
    "dataclasses",
    "enum",
    "collections",
    "collections.abc",
    "hashlib",
    "json",
    "difflib",
    "gc",
    "contextlib",
    "re",
    "functools",
    "itertools",
    "math",
    "string",
    "textwrap",
    "datetime",
    "pydantic",
    "heapq",  # the cheapest path of SPEC G7: a priority queue, pure
}
FORBIDDEN_CALLS = {"now", "utcnow", "today", "time", "open", "print", "input"}


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for item in ast.walk(tree):
        if isinstance(item, ast.Import):
            names |= {alias.name for alias in item.names}
        elif isinstance(item, ast.ImportFrom) and item.module:
            names.add(item.module)
    return names


def test_engine_imports_nothing_that_does_io() -> None:
    modules = sorted(ENGINE.glob("*.py"))
    assert len(modules) >= 5
    for path in modules:
        tree = ast.parse(path.read_text(), str(path))
        outside = {name for name in _imports(tree) if not name.startswith("app.engine")}
        assert outside <= ALLOWED, f"{path.name} imports {sorted(outside - ALLOWED)}"


def test_engine_reads_no_clock_and_opens_no_file() -> None:
    for path in sorted(ENGINE.glob("*.py")):
        for item in ast.walk(ast.parse(path.read_text())):
            if isinstance(item, ast.Call):
                name = item.func.attr if isinstance(item.func, ast.Attribute) else getattr(item.func, "id", "")
                assert name not in FORBIDDEN_CALLS, f"{path.name}:{item.lineno} calls {name}()"
