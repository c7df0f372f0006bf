"""The ``interlock`` command: the one typer app, on which each command module registers its commands.

Each module of ``app/cli/`` is one command group and a thin shell: read input, call the engine or a shell, print.
No command module imports another (tests/test_cli_package.py): what two of them share, the failures' mapping to
messages and exit codes with it, is ``app/cli/common.py``. This module builds the app, has each group register its
commands, and lists them in ``--help`` in the order of ``HELP_ORDER``.

Each command imports what it needs when it runs, never at the top of its module (issue 16, item 5): the help and a
command's options come from these modules alone, so ``interlock --help`` loads no pydantic model, HTTP client or
git binding, and ``validate`` only the engine's graph. tests/test_cli_startup.py checks that importing this module
stays light.
"""

from __future__ import annotations

from typing import NoReturn

import typer

from app.cli import (
    actions,
    archive,
    config,
    continuing,
    demo,
    doctor,
    graphs,
    migrate,
    reports,
    runs,
    service,
    simulate,
)
from app.cli.common import run_command_line

GROUPS = (graphs, demo, service, actions, runs, continuing, reports, doctor, config, migrate, archive, simulate)
# The commands as ``interlock --help`` lists them (groups of commands, like ``config``, come after them): a new
# command's name goes here too, where a reader of the help looks for it.
HELP_ORDER = (
    *("validate", "contract", "draw", "demo", "serve", "redeliver", "step", "handle"),
    *("run", "deliver", "abandon", "stop", "approve", "amend", "answer", "route"),
    *("status", "board", "journey", "money", "doctor", "budget", "verify", "migrate", "archive", "resume"),
    "simulate",
)

cli = typer.Typer(
    name="interlock",
    help="Deterministic multi-agent workflows: agents do the steps, engine code routes the run.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: rich's help formatter costs more than the rest of a start (issue 16)
)


def build(app: typer.Typer) -> None:
    """Every group's commands registered on ``app``, in the help's order; a command not in it is refused here."""
    for group in GROUPS:
        group.register(app)
    names = [command.name for command in app.registered_commands]
    unlisted = [name for name in names if name not in HELP_ORDER]
    stale = [name for name in HELP_ORDER if name not in names]  # a command whose group is not in GROUPS
    if unlisted or stale or len(set(names)) != len(names):
        raise RuntimeError(
            f"app/cli/assemble.py: HELP_ORDER lists each command once; not listed: {unlisted}; not registered: {stale}"
        )
    app.registered_commands.sort(key=lambda command: HELP_ORDER.index(str(command.name)))


build(cli)


def main() -> NoReturn:
    """Console entry point: maps every failure to a message and an exit code, never a traceback."""
    run_command_line(cli)
