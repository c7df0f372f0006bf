"""The layers of ``app/``: a module imports only from its own layer or a lower one, and no imports go round in
a cycle, between modules or between packages.

Why a test and not a convention: the shells grew into each other once (the GitHub adapter read the service's
settings, App-less mode and the webhook handlers imported each other), and nothing failed. Every import
counts here, wherever it stands: at the top, inside a function, or under ``TYPE_CHECKING`` (a cycle the type
checker needs is still a cycle a reader must untangle). The layer order is stated once here, in ``LAYERS``,
and once in the README's Development section, which a test below reads back so the two cannot drift.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from tests.helpers import DOCS, ROOT

# The layer order, lowest first; each entry is a folder (every module below it) or a file pattern.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("engine", ("app/engine/",)),
    (
        "adapters",
        (
            "app/store/",
            "app/agents/",
            "app/github/",
            "app/redact.py",
            "app/inputfile.py",
            "app/graphset.py",
            "app/gitaccess.py",
        ),
    ),
    ("runner", ("app/runner/",)),
    ("shells", ("app/webhooks/", "app/local/")),
    ("cli", ("app/cli/", "app/__main__.py")),
)
ROOT_PACKAGE = "app/__init__.py"  # the package itself: only the version; it belongs to no layer and imports nothing


@dataclass(frozen=True)
class Import:
    """One import statement's target inside ``app``, where it stands."""

    source: str  # the importing module, as a path relative to the root (app/x/y.py)
    target: str  # the imported module, likewise
    line: int


@dataclass
class ModuleGraph:
    """The modules of ``app/`` (paths relative to the root) and the imports between them."""

    modules: set[str]
    imports: list[Import] = field(default_factory=list)

    def edges(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {module: set() for module in self.modules}
        for item in self.imports:
            found[item.source].add(item.target)
        return found


def dotted(path: str) -> str:
    """``app/x/y.py`` -> ``app.x.y``; a package's ``__init__.py`` is the package."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_graph(root: Path) -> ModuleGraph:
    """Every module below ``root/app`` and every import between them, found by reading the source (nothing
    is imported, so a cycle that would break at import time is still reported, not raised)."""
    paths = sorted(path.relative_to(root).as_posix() for path in (root / "app").rglob("*.py"))
    by_name = {dotted(path): path for path in paths}
    found: dict[Import, None] = {}  # in reading order, once each (`from m import a, b` is one import of m)
    for path in paths:
        tree = ast.parse((root / path).read_text(encoding="utf-8"), path)
        for node in ast.walk(tree):
            for name, line in imported_names(node, path):
                target = resolve(name, by_name)
                if target is not None and target != path:
                    found[Import(path, target, line)] = None
    return ModuleGraph(set(paths), list(found))


def imported_names(node: ast.AST, path: str) -> list[tuple[str, int]]:
    """The dotted names an import statement may load: for ``from m import n`` both ``m.n`` (a submodule)
    and ``m`` (a name defined in it); ``resolve`` keeps the one that is a module."""
    if isinstance(node, ast.Import):
        return [(alias.name, node.lineno) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # relative: counted from the importing module's package
        package = dotted(path).split(".") if path.endswith("__init__.py") else dotted(path).split(".")[:-1]
        anchor = ".".join(package[: len(package) - node.level + 1])
        base = f"{anchor}.{base}" if base else anchor
    return [(f"{base}.{alias.name}" if alias.name != "*" else base, node.lineno) for alias in node.names]


def resolve(name: str, by_name: dict[str, str]) -> str | None:
    """The module of ``app`` that importing ``name`` loads (its longest dotted prefix that is one), if any."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        found = by_name.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def layer_of(module: str) -> tuple[int, str] | None:
    """The layer's number and the entry of ``LAYERS`` that holds ``module``, or None when none does."""
    for number, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if module.startswith(entry) if entry.endswith("/") else fnmatch(module, entry):
                return number, entry
    return None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of two or more nodes (Tarjan's algorithm), each
    written from its first node back to it, so a failure names a path a reader can follow."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = {stack.pop()}
            while node not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(path_round(group, edges) for group in groups)


def path_round(group: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first node back to itself, inside the group (breadth first)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for target in sorted(edges.get(node, set()) & group):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group always has one


def layering_problems(graph: ModuleGraph) -> list[str]:
    """Every way ``graph`` breaks the layers, one line each: a module in no layer, an import from a higher
    layer, a cycle between modules, a cycle between the packages (the entries of ``LAYERS``)."""
    problems = [f"{module} is in no layer of LAYERS" for module in sorted(graph.modules) if not placed(module)]
    problems += [
        f"{ROOT_PACKAGE}:{item.line} imports {item.target}" for item in graph.imports if item.source == ROOT_PACKAGE
    ]
    for item in graph.imports:
        source, target = layer_of(item.source), layer_of(item.target)
        if source and target and target[0] > source[0]:
            problems.append(
                f"{item.source}:{item.line} imports {item.target} upward "
                f"(layer {source[0]} {LAYERS[source[0]][0]} -> layer {target[0]} {LAYERS[target[0]][0]})"
            )
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph.edges())]
    problems += [f"package cycle: {' -> '.join(cycle)}" for cycle in cycles(package_edges(graph))]
    return problems


def placed(module: str) -> bool:
    return module == ROOT_PACKAGE or layer_of(module) is not None


def package_edges(graph: ModuleGraph) -> dict[str, set[str]]:
    """The imports between the entries of ``LAYERS`` (a package, or a file pattern): same-layer packages may
    use one another, but only one way round."""
    found: dict[str, set[str]] = {}
    for item in graph.imports:
        source, target = layer_of(item.source), layer_of(item.target)
        if source and target and source[1] != target[1]:
            found.setdefault(source[1], set()).add(target[1])
    return found


def test_app_keeps_its_layers() -> None:
    graph = read_graph(ROOT)
    assert len(graph.modules) > 50 and len(graph.imports) > 200  # the whole of app/ was read
    assert layering_problems(graph) == []


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_checker_finds_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    """The checker on a small tree made to break both rules, each in a place that is easy to miss: the
    upward import sits inside a function, one step of the cycle under ``TYPE_CHECKING``, one relative."""
    write_tree(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/engine/__init__.py": "",
            "app/engine/core.py": "def later():\n    from app.runner import job\n",
            "app/store/__init__.py": "",
            "app/store/disk.py": "from .remote import push\n",
            "app/store/remote.py": """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from app.store.disk import push
            def push(): ...
        """,
            "app/runner/__init__.py": "",
            "app/runner/job.py": "import app.store.disk\n",
        },
    )
    graph = read_graph(tmp_path)
    assert layering_problems(graph) == [
        "app/engine/core.py:2 imports app/runner/job.py upward (layer 0 engine -> layer 2 runner)",
        "import cycle: app/store/disk.py -> app/store/remote.py -> app/store/disk.py",
    ]


def test_the_checker_finds_a_cycle_between_packages_and_an_unplaced_module(tmp_path: Path) -> None:
    """Two packages of the same layer may use each other one way; both ways is a cycle even though no module
    imports itself back (app.store.github and app.github.client must not come to need each other). A module
    no layer holds is reported, and so is an import in the root package, which belongs to no layer."""
    write_tree(
        tmp_path,
        {
            "app/store/journal.py": "from app.github import client\n",
            "app/store/github.py": "",
            "app/github/client.py": "",
            "app/github/seen.py": "from app.store.github import nothing\n",
            "app/engine/graph/model.py": "",
            "app/tools.py": "",
            "app/__init__.py": "from app.engine.graph.model import Graph\n",
        },
    )
    assert layering_problems(read_graph(tmp_path)) == [
        "app/tools.py is in no layer of LAYERS",
        "app/__init__.py:1 imports app/engine/graph/model.py",
        "package cycle: app/github/ -> app/store/ -> app/github/",
    ]


README = DOCS / "development.md"
DIAGRAM_LINE = re.compile(r"^\s*(\d)\s+(\w+)\s+(app/\S+(?:\s+app/\S+)*)\s*$")


def readme_layers() -> list[tuple[str, tuple[str, ...]]]:
    """The layers as the README's diagram draws them (``N  name  path path ...``), lowest first."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- layers -->\s*```text\n(.*?)```", text, re.S)
    assert block, "docs/development.md has no ```text block after <!-- layers -->"
    rows = [match.groups() for line in block.group(1).splitlines() if (match := DIAGRAM_LINE.match(line))]
    assert [int(number) for number, _, _ in rows] == sorted((int(row[0]) for row in rows), reverse=True)
    return [(name, tuple(paths.split())) for _, name, paths in reversed(rows)]


def test_the_readme_draws_the_layers_this_test_checks() -> None:
    assert readme_layers() == [(name, entries) for name, entries in LAYERS]


def test_every_layer_entry_names_code_that_exists() -> None:
    for _, entries in LAYERS:
        for entry in entries:
            assert list(ROOT.glob(entry + "*.py" if entry.endswith("/") else entry)), f"{entry} matches no module"
