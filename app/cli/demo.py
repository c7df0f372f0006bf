"""``interlock demo``: the feature graph run end to end on a fresh demo repository, with a scripted agent.

What a new user runs first: no network, no model, no configuration, a few seconds; ``--keep DIR`` leaves the
repository there to look at (``app/local/demo.py`` makes it and runs the graph).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(cli: typer.Typer) -> None:
    cli.command("demo")(demo)


def demo(
    keep: Annotated[Path | None, typer.Option("--keep", help="Make the demo repository here and keep it.")] = None,
) -> None:
    """Run the feature graph on a fresh demo repository with a scripted agent: no network, a few seconds."""
    from app.graphset import library_dirs
    from app.local.demo import run_demo

    typer.echo(run_demo(library_dirs(), keep))
