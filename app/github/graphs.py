"""A repository's graphs: the graph of a name from the first graphset folder that holds it on the default
branch, else from the bundled library (SPEC G6). A name from GitHub (a `graph:` label, `default_graph`) is
only ever a name: never a path on the service's disk (SPEC GH9)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.engine.errors import InterlockError
from app.engine.graph.model import Graph
from app.engine.graph.validate import validate_graph
from app.github.client import Installation
from app.github.config import RepoConfig
from app.github.extends import folder_place
from app.graphset import find_graph
from app.inputfile import InputUnreadable, parse_json_text

Found = tuple[Graph | None, list[str], str | None]


def repo_graph(api: Installation, repo: str, branch: str, name: str, folders: list[str], library: list[Path]) -> Found:
    """The graph named ``name``, with its errors and the folder it came from (``None``: the library), which
    says whose it is: the team whose graphset holds it."""
    for folder in folders:
        place = folder_place(api, repo, branch, folder)  # a folder an extended file names: in its repository
        raw = api.file(place[0], f"{place[1].rstrip('/')}/{name}.json", place[2]) if place else None
        if raw is not None:
            try:  # read with a file's limits (app/inputfile.py): a deep one is no RecursionError
                outcome = validate_graph(parse_json_text(f"{folder}/{name}.json", raw))
            except InputUnreadable as exc:
                return None, [str(exc)], folder
            return outcome.graph, [f"`{i.code}`: {i.message}" for i in outcome.errors], folder
    try:
        return find_graph(name, library, paths=False), [], None
    except InterlockError as exc:
        return None, [str(exc)], None


def graph_label(labels: Sequence[str], config: RepoConfig, default: str) -> str:
    """The graph a ``graph:<name>`` label of the issue names, else the team's default graph (SPEC GH1)."""
    prefix = config.graph_label_prefix
    return next((name[len(prefix) :] for name in labels if name.startswith(prefix)), default)
