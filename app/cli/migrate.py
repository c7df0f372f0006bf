"""``interlock migrate RUN | --all [--repo DIR]``: move runs of a local state branch to journal layout v2.

Each run moves in one compare-and-swap commit of its own, its record and every file's bytes unchanged (only
trees are new: ``app/store/reshard.py``), so ``verify`` gives the same answer before and after and a kill at
any moment leaves the run whole in v1 or in v2. A run needs no command to move: the next save of a v1 run
moves it in that save's commit. Local only: a run on GitHub's state branch moves in the commit of its next
write, the service's (``app/store/github_layout.py``) or its job's (``app/runner/remote.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.common import Repo, refuse


def register(cli: typer.Typer) -> None:
    @cli.command("migrate")
    def migrate_command(
        run_id: Annotated[str | None, typer.Argument(metavar="[RUN]")] = None,
        every: Annotated[bool, typer.Option("--all", help="Every run of the state branch.")] = False,
        repo: Repo = Path("."),
    ) -> None:
        """Rewrite a run's journal (or every run's, with --all) in layout v2: one commit per run."""
        from app.store.gitstore import GitStore

        if (run_id is None) == (not every):
            refuse("name one RUN or give --all (not both)")
        store = GitStore(repo)
        try:
            names = [run_id] if run_id is not None else [run.id for run in store.list_runs()]
            if not names:
                typer.echo("no runs on the state branch: nothing to move")
            for name in names:
                moved = store.migrate(name)
                typer.echo(f"run {name}: {'moved to' if moved else 'already in'} journal layout v2")
        finally:
            store.close()
