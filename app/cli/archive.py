"""``interlock archive [--repo DIR] [--remote URL] [--older-than DAYS] [RUN]``: pack ended runs of a state branch.

Each run ended (done or cancelled) and last written more than DAYS days ago has its folder ``runs/<id>/``
replaced by one file ``archive/<id>.jsonl.gz`` in one compare-and-swap commit of its own
(``app/store/archive_git.py``); ``status`` and ``verify`` read it as before. DAYS is ``--older-than``, else
``archive_after_days`` of ``.github/interlock.yml`` in ``--repo``, else ``archive.DEFAULT_DAYS``; 0: none.
Naming a RUN archives that one whatever its age, if it ended. Running it twice changes nothing.

``--remote URL`` archives the state branch of that remote instead, through a scratch clone, with the token of
``INTERLOCK_PUSH_TOKEN`` or ``GITHUB_TOKEN`` (``app/runner/archive_remote.py``): what the scheduled workflow
``.github/workflows/interlock-archive.yml`` runs on GitHub, in a checkout of the default branch.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from app.cli.common import Repo, refuse

MAX_DAYS = 36500  # as ``archive_after_days`` allows: a century
RemoteOpt = Annotated[
    str | None, typer.Option("--remote", help="Archive the state branch of this git remote (URL) instead.")
]


def archive_days(repo: Path, older_than: int | None) -> int:
    """``--older-than``, else the repository configuration's ``archive_after_days`` (its defaults merged)."""
    from app.github.config import CONFIG_PATH, ConfigInvalid, parse_config

    if older_than is not None:
        if not 0 <= older_than <= MAX_DAYS:
            refuse(f"--older-than must be 0 (never) or more days, at most {MAX_DAYS}, not {older_than}")
        return older_than
    path = repo / CONFIG_PATH
    try:
        config = parse_config(path.read_bytes() if path.is_file() else None)
    except ConfigInvalid as exc:
        refuse(f"{exc} (or give --older-than)")
    if config.extends and "archive_after_days" not in config.model_fields_set:
        typer.echo(
            f"{CONFIG_PATH} extends {config.extends}, which this command does not read: "
            f"archive_after_days is {config.archive_after_days} unless this file sets it"
        )
    return config.archive_after_days


def register(cli: typer.Typer) -> None:
    @cli.command("archive")
    def archive_command(
        run_id: Annotated[str | None, typer.Argument(metavar="[RUN]")] = None,
        repo: Repo = Path("."),
        remote: RemoteOpt = None,
        older_than: Annotated[
            int | None, typer.Option("--older-than", help="Archive ended runs last written more than DAYS ago.")
        ] = None,
    ) -> None:
        """Replace the files of ended runs on the state branch by one archive file each."""
        from app.redact import Redactor
        from app.runner.archive_remote import archive_remote
        from app.runner.remote import push_token
        from app.store.archive_git import ArchiveRefused, archive_run, due_on_branch

        days = archive_days(repo, older_than)
        now = datetime.now(UTC)
        try:
            if remote is not None:
                with tempfile.TemporaryDirectory(prefix="interlock-archive-") as scratch:
                    done = archive_remote(
                        remote, push_token(os.environ), Path(scratch) / "state.git", days, now, run_id
                    )
            else:
                names = [run_id] if run_id is not None else due_on_branch(repo, now, days)
                done = [(name, archive_run(repo, name)) for name in names]
        except ArchiveRefused as exc:
            refuse(Redactor().text(str(exc)))
        if not done:
            typer.echo(f"no ended run older than {days} days: nothing to archive")
        for name, packed in done:
            typer.echo(f"run {name}: {'archived' if packed else 'already archived'}")
