"""No file under app/ or tests/ refers to a path outside the repository.

A fresh clone has nothing beside it, so whatever the code or the tests read must be inside the checkout
(the GitHub fixtures are in tests/fixtures/github/). Python files are read as syntax trees: a path built
from ``__file__`` with more ``parent`` steps than the file is deep, any step up from ``ROOT``, and string
constants that start with an upward step, name the development machine's workspace or its shared corpus
are reported. Other text files (fixtures, YAML) are searched for the same strings.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from tests.helpers import ROOT

SCANNED = ("app", "tests")
UP = os.pardir + "/"
# Places outside any clone that only the development machine has: its workspace and the corpus in it.
OUTSIDE = ("/" + "work/", "github" + "-corpus")
TEXT = re.compile("|".join([rf"(?<![\w./-]){re.escape(UP)}", *map(re.escape, OUTSIDE)]))


def string_findings(value: str) -> list[str]:
    if value.startswith(UP):
        return [f"the relative path {value[:60]!r} goes up, out of the repository"]
    return [f"{value[:60]!r} names {place!r}, which a clone does not have" for place in OUTSIDE if place in value]


def steps_up_from_file(node: ast.expr) -> int | None:
    """How many folders up ``node`` goes from ``__file__``; None when it is not built from ``__file__``."""
    steps = 0
    while True:
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            steps, node = steps + 1, node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            index = node.slice.value if isinstance(node.slice, ast.Constant) else None
            steps, node = steps + (index + 1 if isinstance(index, int) else 1), node.value.value
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("resolve", "absolute"):
            node = node.func.value  # type: ignore[attr-defined]
        elif isinstance(node, ast.Call) and len(node.args) == 1:  # Path(__file__)
            node = node.args[0]
        else:
            return steps if isinstance(node, ast.Name) and node.id == "__file__" else None


def node_findings(node: ast.AST, relative: Path) -> list[str]:
    """Why one node of ``relative``'s syntax tree refers outside the repository (nothing when it does not)."""
    reasons: list[str] = []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        reasons = string_findings(node.value)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and ast.unparse(node.right) == repr(os.pardir):
        reasons = [f"/ {os.pardir!r} goes up, out of the repository"]
    elif isinstance(node, ast.Attribute) and node.attr in ("parent", "parents") and ast.unparse(node.value) == "ROOT":
        reasons = [f"ROOT.{node.attr} is outside the repository"]
    steps = steps_up_from_file(node) if isinstance(node, ast.Attribute | ast.Subscript) else None
    if steps is not None and steps > len(relative.parts):
        reasons.append(f"{steps} folders up from {relative} is outside the repository")
    return reasons


def python_findings(relative: Path, source: str) -> list[str]:
    """What in a Python file refers to a path outside the repository, as ``line: reason``."""
    found = {(node.lineno, reason) for node in ast.walk(ast.parse(source)) for reason in node_findings(node, relative)}
    return [f"{line}: {reason}" for line, reason in sorted(found)]


def text_findings(text: str) -> list[str]:
    return [
        f"{text.count(chr(10), 0, match.start()) + 1}: {match.group()!r} refers outside the repository"
        for match in TEXT.finditer(text)
    ]


def findings(root: Path) -> list[str]:
    """Every reference to an outside path in the text files of ``root``'s scanned folders."""
    found: list[str] = []
    for path in sorted(p for folder in SCANNED for p in (root / folder).rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # not text
        relative = path.relative_to(root)
        lines = python_findings(relative, text) if path.suffix == ".py" else text_findings(text)
        found += [f"{relative}:{line}" for line in lines]
    return found


def test_no_file_of_app_or_tests_refers_to_a_path_outside_the_repository() -> None:
    assert findings(ROOT) == []


SIBLING = "sha" + "red"  # the folder beside the repository, spelt so that this file names no path outside it


def test_the_scan_reports_each_way_of_reaching_outside_and_nothing_inside() -> None:
    source = "\n".join(
        [
            f"A = ROOT.parent / {SIBLING!r}",
            f"J = ROOT / {os.pardir!r} / {SIBLING!r}",
            "B = Path(__file__).resolve().parent.parent.parent / 'x'",
            "C = Path(__file__).parents[2]",
            f"D = {UP + SIBLING + '/SPEC.md'!r}",
            f"E = {OUTSIDE[0] + 'main/graphs'!r}",
            f"F = {'corpus: ' + OUTSIDE[1]!r}",
            "G = Path(__file__).resolve().parent.parent / 'graphs'",
            "H = Path(__file__).parents[1] / 'graphs'",
            f"I = {'runs/run-1/' + UP + 'x.json'!r}",
            "K = f'{old}..{new}'",
        ]
    )
    lines = [int(entry.split(":")[0]) for entry in python_findings(Path("tests/a.py"), source)]
    assert lines == [1, 2, 3, 4, 5, 6, 7]  # G, H stay in the repository; I is inside a git tree; K a git range
    text = f"cwd: {UP}up\nfile: runs/{UP}x.json\nsee {OUTSIDE[1]}/README.txt\n"
    assert [entry.split(":")[0] for entry in text_findings(text)] == ["1", "3"]
