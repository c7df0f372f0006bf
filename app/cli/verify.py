"""``interlock verify RUN [--repo DIR|OWNER/NAME]``: is the journal of a run what its transitions wrote (SPEC J6)?

The check itself is ``app/runner/verify.py``; this reads the journal from a local repository's state branch or,
for ``--repo OWNER/NAME``, through GitHub's API at one commit, as ``status``/``journey``/``money`` do
(``app/cli/remote.py``). Exit 0: every checkable transition verified; 1: the first divergence, named; 2: the
command could not check (no such run, no access), one line.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.remote import Reported, github_repository, installation, load, plainly
from app.cli.runs import make_shell
from app.engine.gatemode import GateMode

if TYPE_CHECKING:  # the check is loaded when the command runs (app/cli/main.py)
    from app.engine.anchor import Witness
    from app.runner.verify import Verification

EXIT_DIVERGED = 1
EXIT_CANNOT_CHECK = 2


def verify_run(repo: Path, run_id: str) -> Verification:
    """The journal checked, then held against the anchors of its head (SPEC J6): on GitHub the run's check run and
    status comment, locally the anchor in the repository's git folder (``app/store/anchor_file.py``)."""
    from app.engine.errors import RunNotFound
    from app.runner.verify import verify
    from app.store.anchor_file import local_witnesses

    if name := github_repository(repo):
        with plainly(name):
            try:
                state, run = load(name, run_id)  # every later read at the commit the record was read from
            except RunNotFound:
                witnesses = remote_witnesses(name, run_id, None)
                if not witnesses:
                    raise
                return verify(NoJournal(), run_id, witnesses)  # the record itself gone: stripped
            witnesses = remote_witnesses(name, run_id, run.links.get("issue"))
            return verify(state, run_id, witnesses, expected=True)  # the App anchors every run it makes
    store = make_shell(repo, None, None, GateMode.STOP).store
    return verify(store, run_id, local_witnesses(store.path, run_id))


def remote_witnesses(name: str, run_id: str, linked: str | None) -> list[Witness]:
    from app.github.anchor import github_witnesses, issue_of

    api = installation(name)
    return github_witnesses(api, name, run_id, issue_of(run_id, linked), app_slug(name))


def app_slug(name: str) -> str | None:
    """The App whose check runs and comments are witnesses: ``GITHUB_APP_SLUG``, else, with the App's credentials,
    the App itself; ``None`` with a token alone (``app/github/anchor.py`` says what is read then)."""
    if slug := os.environ.get("GITHUB_APP_SLUG"):
        return slug
    if not (os.environ.get("GITHUB_APP_ID") or os.environ.get("GITHUB_APP_CLIENT_ID")):
        return None
    from app.cli.config import app_slug_on

    return app_slug_on(name)


class NoJournal:
    """A state branch without the run's files: what ``verify`` reads when the record is gone."""

    def read(self, path: str) -> bytes | None:
        return None

    def list_files(self, prefix: str) -> list[str]:
        return []


def register_verify(cli: typer.Typer) -> None:
    @cli.command("verify")
    def verify_command(
        run_id: Annotated[str, typer.Argument(metavar="RUN")],
        repo: Reported = Path("."),
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> int:
        """Replay a run's journal through the engine; name the first divergence (edited file or engine drift)."""
        result = verify_run(repo, run_id)
        if as_json:
            found = asdict(result.found) if result.found is not None else None
            data = {**asdict(result), "found": found, "summary": result.summary()}
            typer.echo(json.dumps(data, indent=2))
        else:
            typer.echo(result.summary())
        return exit_code(result)


def exit_code(result: Verification) -> int:
    """0 verified, 1 a divergence; 2 when it cannot check: rules a newer Interlock made a transition under."""
    from app.runner.verify import Divergence

    if result.found is None:
        return 0
    return EXIT_CANNOT_CHECK if result.found.kind is Divergence.UNKNOWN_RULES else EXIT_DIVERGED
