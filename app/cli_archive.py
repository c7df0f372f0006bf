"""``interlock archive [--repo DIR] [--older-than DAYS] [RUN]``: pack ended runs of a local state branch.

Each run ended (done or cancelled) and last written more than ``--older-than`` days ago (default
``archive.DEFAULT_DAYS``; 0: none) has its folder ``runs/<id>/`` replaced by one file ``archive/<id>.jsonl.gz``
in one compare-and-swap commit of its own (``app/store/archive_git.py``); ``status`` and ``verify`` read it as
before. Naming a RUN archives that one whatever its age, if it ended. Running it twice changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from app.cli_runs import Repo, refuse


def register_archive(cli: typer.Typer) -> None:
    @cli.command("archive")
    def archive_command(
        run_id: Annotated[str | None, typer.Argument(metavar="[RUN]")] = None,
        repo: Repo = Path("."),
        older_than: Annotated[
            int | None, typer.Option("--older-than", help="Archive ended runs last written more than DAYS ago.")
        ] = None,
    ) -> None:
        """Replace the files of ended runs on the state branch by one archive file each."""
        from app.store.archive import ARCHIVE_FOLDER, DEFAULT_DAYS, archived_runs, due
        from app.store.archive_git import ArchiveRefused, archive_run
        from app.store.gitstore import GitStore

        days = DEFAULT_DAYS if older_than is None else older_than
        if days < 0:
            refuse(f"--older-than must be 0 (never) or more days, not {days}")
        store = GitStore(repo)
        archived = archived_runs(store.list_files(f"{ARCHIVE_FOLDER}/"))
        names = [run_id] if run_id is not None else due(store.list_runs(), datetime.now(UTC), days, archived)
        if not names:
            typer.echo(f"no ended run older than {days} days: nothing to archive")
        for name in names:
            try:
                packed = archive_run(repo, name)
            except ArchiveRefused as exc:
                refuse(str(exc))
            typer.echo(f"run {name}: {'archived' if packed else 'already archived'}")
