"""Reading graphs from disk: single files and graphsets (folders of graph files, SPEC U2).

This is a shell module: it does the file I/O and hands parsed JSON to the pure validator. Each file is
judged on its own, so one broken file never hides the verdict on the others.
"""

from __future__ import annotations

import importlib.resources
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.errors import GraphFileError, GraphInvalid, TeamInvalid
from app.engine.graph.model import Graph
from app.engine.graph.validate import Issue, IssueCode, Validation, parse_graph, validate_graph
from app.engine.team import Team, parse_team
from app.inputfile import (
    MAX_INPUT_BYTES,
    TOO_MANY_DIGITS,
    InputUnreadable,
    parse_yaml,
    read_input_bytes,
    read_input_text,
)

MAX_GRAPH_BYTES = MAX_INPUT_BYTES
SCHEMA_SUFFIX = ".schema.json"
LIBRARY_PACKAGE = "app.library"  # graphs/ of the repository, mapped in pyproject.toml


@dataclass(frozen=True)
class FileReport:
    """The validation of one file, as ``interlock validate --json`` prints it."""

    path: str
    validation: Validation

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "valid": self.validation.valid,
            "errors": [issue.to_json() for issue in self.validation.errors],
            "warnings": [issue.to_json() for issue in self.validation.warnings],
        }


def graph_files(path: Path) -> list[Path]:
    """The graph files under ``path``: the file itself, or every ``*.json`` below a folder, sorted.

    JSON Schema files (``*.schema.json``) in a folder are documentation, not graphs, and are skipped.
    """
    if path.is_dir():
        return sorted(p for p in path.rglob("*.json") if p.is_file() and not p.name.endswith(SCHEMA_SUFFIX))
    if path.exists():
        return [path]
    raise GraphFileError(str(path), "no such file or folder", readable=False)


def read_json_file(path: Path, limit: int = MAX_GRAPH_BYTES) -> Any:
    """Parsed JSON of ``path``; ``GraphFileError`` says precisely why it cannot be had."""
    try:
        raw = read_input_bytes(path, limit)
    except InputUnreadable as exc:
        raise GraphFileError(str(path), exc.reason, readable=exc.found) from None
    if not raw.strip():
        raise GraphFileError(str(path), "file is empty: a graph is a JSON object")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise GraphFileError(str(path), f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise GraphFileError(str(path), f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise GraphFileError(str(path), "JSON nested too deeply to be a graph") from None
    except ValueError:  # an integer of more than 4,300 digits: int() refuses it
        raise GraphFileError(str(path), f"not usable JSON: {TOO_MANY_DIGITS}") from None


def validate_file(path: Path, team: Team | None = None) -> FileReport:
    """One file's report. A file that is readable but not a JSON graph gets a ``schema`` error."""
    try:
        data = read_json_file(path)
    except GraphFileError as exc:
        if not exc.readable:
            raise
        return FileReport(str(path), Validation((Issue(IssueCode.SCHEMA, exc.reason),), None))
    return FileReport(str(path), validate_graph(data, team))


def load_graph(path: Path, team: Team | None = None) -> Graph:
    """The graph in ``path``; ``GraphFileError`` or ``GraphInvalid`` (with every error) otherwise."""
    return parse_graph(read_json_file(path), team, source=str(path))


def load_graphset(folder: Path, team: Team | None = None) -> dict[str, Graph]:
    """Every graph of a graphset by name. Two graphs with one name make the set ambiguous: refused."""
    graphs: dict[str, Graph] = {}
    origin: dict[str, Path] = {}
    for path in graph_files(folder):
        graph = load_graph(path, team)
        if graph.name in graphs:
            issue = Issue(IssueCode.SCHEMA, f"graph name {graph.name!r} is also used by {origin[graph.name]}")
            raise GraphInvalid([issue], str(path))
        graphs[graph.name] = graph
        origin[graph.name] = path
    return graphs


def find_graph(reference: str, search: list[Path], *, paths: bool = True) -> Graph:
    """A graph given as a file path, or by name inside one of the ``search`` graphsets. ``paths=False``: by name
    only — a name from GitHub (a label, the repository's configuration) never reads the service's own disk."""
    candidate = Path(reference)
    if paths and (candidate.is_file() or reference.endswith(".json")):
        return load_graph(candidate)
    for folder in search:
        if folder.is_dir():
            graphs = load_graphset(folder)
            if reference in graphs:
                return graphs[reference]
    raise GraphFileError(reference, "no graph file or graph of that name", readable=False)


def load_team(path: Path) -> Team:
    """A team roster from a YAML or JSON file (JSON is YAML, so one parser reads both)."""
    try:
        data = parse_yaml(path, read_input_text(path))
    except InputUnreadable as exc:
        raise TeamInvalid([f"{path}: cannot read: {exc.reason}"]) from None
    return parse_team(data)


def bundled_library() -> Path:
    """The graph library that ships with Interlock.

    An installed package (a wheel, ``pip install .``, the Docker image) carries the repository's
    ``graphs/`` as the package data ``app.library``, found through ``importlib.resources`` wherever the
    package is. An editable install or a bare checkout cannot import ``app.library`` (it is a folder
    mapping, not a folder of ``app/``): there the library is the checkout's own ``graphs/``.
    """
    try:
        anchor = importlib.resources.files(LIBRARY_PACKAGE) / "graph.schema.json"
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "graphs"
    return Path(str(anchor)).parent  # pip installs unpack wheels: the package data is on the file system


def library_dirs() -> list[Path]:
    """Where bundled graphs are looked up: ``$INTERLOCK_LIBRARY`` (an override; the action sets it), the
    current folder's ``graphs/``, then the library that ships with Interlock."""
    extra = [Path(os.environ["INTERLOCK_LIBRARY"])] if os.environ.get("INTERLOCK_LIBRARY") else []
    return [*extra, Path.cwd() / "graphs", bundled_library()]
