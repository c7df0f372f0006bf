"""``interlock budget RUN calls=+10 usd=+2``: raise the limits of a local run a budget stopped (SPEC P5).

The run goes on where it stopped, driven as ``resume`` drives it (the agents it was launched with), and the raise
is kept in its ledger with who raised it and when. The words are read as the comment command reads them
(``app.engine.raises.parse_raise``), so both refuse the same mistakes the same way; a mistake changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.runs import AsJson, Repo, continue_run, refuse

Raises = Annotated[list[str], typer.Argument(metavar="LIMIT=+N...", help="calls=+N, units=+N, usd=+N, attempts=+N.")]


def register(cli: typer.Typer) -> None:
    @cli.command("budget")
    def budget(
        run_id: Annotated[str, typer.Argument(metavar="RUN")],
        raises: Raises,
        repo: Repo = Path("."),
        as_json: AsJson = False,
    ) -> None:
        """Raise the limits of a run a budget stopped; it goes on where it stopped, paying nothing twice."""
        from app.engine import events as ev
        from app.engine.raises import RaiseInvalid, parse_raise
        from app.local.launch import CommandLine

        try:
            amounts = parse_raise(raises)
        except RaiseInvalid as exc:
            refuse(str(exc))
        continue_run(run_id, repo, CommandLine(None, None, None), "budget", as_json, ev.BudgetRaised, amounts=amounts)
