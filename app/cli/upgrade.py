"""``interlock resume RUN [--at STAGE] [--upgrade [--graph GRAPH]]``: resume a run, maybe on its graph's current
version (SPEC J7). Its own module because ``--upgrade`` adds a step before the resume every continuing command
shares (``app/cli/runs.py``); the upgrade itself is ``app/local/upgrade.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.runs import AgentOpt, AsJson, ConfigOpt, GatesOpt, Repo, continue_run, make_shell
from app.engine.errors import EventRejected
from app.engine.gatemode import GateMode

GraphOpt = Annotated[
    str | None, typer.Option("--graph", help="With --upgrade: the graph file or name (default: the run's graph name).")
]


def register_resume(cli: typer.Typer) -> None:
    @cli.command("resume")
    def resume(
        run_id: Annotated[str, typer.Argument(metavar="RUN")],
        at: Annotated[str | None, typer.Option("--at", help="Stage to re-enter.")] = None,
        to_current: Annotated[
            bool, typer.Option("--upgrade", help="First move the run to its graph's current version.")
        ] = False,
        graph_ref: GraphOpt = None,
        repo: Repo = Path("."),
        agent: AgentOpt = None,
        config: ConfigOpt = None,
        gates: GatesOpt = None,
        as_json: AsJson = False,
    ) -> None:
        """Resume a stopped, failed, escalated or waiting run (visit budgets re-armed)."""
        from app.engine import events as ev
        from app.local.launch import CommandLine
        from app.local.teamrun import own_config, plan_run
        from app.local.upgrade import upgrade

        if graph_ref is not None and not to_current:
            raise typer.BadParameter("--graph goes with --upgrade")
        if to_current:
            shell = make_shell(repo, None, config, GateMode.STOP)
            run = shell.store.load(run_id)
            graph = plan_run(repo, config or own_config(repo), graph_ref or run.graph, None).graph
            if at is not None and not graph.has_stage(at):  # refused before the move, so nothing changes
                raise EventRejected(run_id, run.status.value, "Resume", f"graph {graph.name!r} has no stage {at!r}")
            moved = upgrade(shell, run_id, graph)
            typer.echo(f"run {run_id} moved to graph {moved.graph} ({moved.graph_hash[:19]})", err=True)
        continue_run(run_id, repo, CommandLine(agent, config, gates), "resume", as_json, ev.Resume, stage=at)
