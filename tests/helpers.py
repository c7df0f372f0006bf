"""Shared test helpers: where the project's graphs and fixtures are, and small graph builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = ROOT / "graphs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def node(stage: str, capability: str = "coding", **extra: Any) -> dict[str, Any]:
    return {"stage": stage, "capability": capability, **extra}


def edge(source: str, verdict: str, target: str) -> dict[str, Any]:
    return {"from": source, "verdict": verdict, "to": target}


def graph(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], entry: str = "a", **extra: Any) -> dict[str, Any]:
    return {"name": "test", "entry": entry, "nodes": nodes, "edges": edges, **extra}


DOCS = ROOT / "docs"


def doc(*pages: str) -> str:
    """The text of the named pages of the documentation site, joined by blank lines in the order named:
    ``"graphs/format.md"`` is ``docs/graphs/format.md``, and ``"README.md"`` the repository's README."""
    return "\n\n".join(
        (ROOT / page if page == "README.md" else DOCS / page).read_text(encoding="utf-8") for page in pages
    )
