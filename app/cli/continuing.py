"""The commands that continue a local run: ``deliver``, ``abandon``, ``approve``, ``amend``, ``answer``, ``route``,
``resume`` and ``budget``.

Each applies a person's event to the run and drives it on, exactly as ``run`` does, with the agents the run was
launched with (or what its command line overrides, recorded in the same transition), and prints where it stopped;
it exits 0 whatever status the run stopped in: non-zero means the command itself could not work. They differ in
what they say, not in how they are declared: each is one ``continue_with`` call. ``resume --upgrade`` first moves
the run to its graph's current version (SPEC J7, ``app/local/upgrade.py``). ``budget RUN calls=+10 usd=+2`` raises
the limits of a run a budget stopped (SPEC P5): the raise is kept in its ledger with who raised it and when, and
its words are read as the comment command reads them (``app.engine.raises.parse_raise``), so both refuse the same
mistakes the same way; a mistake changes nothing.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from app.cli.common import (
    AgentOpt,
    AsJson,
    ConfigOpt,
    GatesOpt,
    Repo,
    RunArg,
    emit_run,
    reading_shell,
    refuse,
    refuse_on_errors,
    shell_with,
)
from app.engine.gatemode import GateMode

if TYPE_CHECKING:  # loaded by the commands when they run (issue 16, item 5: app/cli/assemble.py)
    from app.engine import events as ev
    from app.engine.record import Launch, Run
    from app.local.launch import CommandLine
    from app.local.shell import LocalShell

ROUTE_AT_HELP = "Route from this stage instead: the one whose edge a refused visit was on."
GraphOpt = Annotated[
    str | None, typer.Option("--graph", help="With --upgrade: the graph file or name (default: the run's graph name).")
]
Raises = Annotated[list[str], typer.Argument(metavar="LIMIT=+N...", help="calls=+N, units=+N, usd=+N, attempts=+N.")]
# a step a command takes before its event (``resume --upgrade``): the run, --repo, --config, what ``said`` read
Before = Callable[[str, Path, Path | None, dict[str, Any]], None]


def register(cli: typer.Typer) -> None:
    continue_with(cli, "deliver", "Go to the end: the run branch is ready for a person to merge.", "Deliver")
    continue_with(cli, "abandon", "Cancel the run (the branch stays).", "Abandon")
    continue_with(
        cli,
        "approve",
        "Approve the gate the run waits at.",
        "GateApproved",
        Said("note", "note", Annotated[str, typer.Option("--note", help="Annotation for the next steps.")], ""),
    )
    continue_with(
        cli,
        "amend",
        "Refuse the gate with amendments: the node runs again (no visit spent).",
        "GateAmended",
        Said("note", "note", Annotated[str, typer.Option("--note", help="The changes requested.", callback=words)]),
    )
    continue_with(
        cli,
        "answer",
        "Answer the questions of a run that waits for input.",
        "InputAnswered",
        Said("text", "text", Annotated[str, typer.Option("--text", help="Your answer to the run's questions.")]),
    )
    continue_with(
        cli,
        "route",
        "Route a stopped run on a verdict of your choice from its current stage.",
        "RouteChosen",
        Said("verdict", "verdict", Annotated[str, typer.Argument(help="A label of the current stage.")]),
        Said("stage", "at", Annotated[str | None, typer.Option("--at", help=ROUTE_AT_HELP)], None),
    )
    register_resume(cli)
    cli.command("budget")(budget)


def register_resume(cli: typer.Typer) -> None:
    upgrade = "First move the run to its graph's current version."
    continue_with(
        cli,
        "resume",
        "Resume a stopped, failed, escalated or waiting run (visit budgets re-armed).",
        "Resume",
        Said("stage", "at", Annotated[str | None, typer.Option("--at", help="Stage to re-enter.")], None),
        Said(None, "to_current", Annotated[bool, typer.Option("--upgrade", help=upgrade)], False),
        Said(None, "graph_ref", GraphOpt, None),
        before=upgrade_first,
    )


def upgrade_first(run_id: str, repo: Path, config: Path | None, said: dict[str, Any]) -> None:
    """``resume --upgrade [--graph GRAPH]``: the run moved to its graph's current version before it resumes; a
    stage of ``--at`` the new version lacks is refused before the move, so nothing changes."""
    from app.engine.errors import EventRejected
    from app.local.teamrun import own_config, plan_run
    from app.local.upgrade import upgrade

    at, to_current, graph_ref = said["at"], said["to_current"], said["graph_ref"]
    if graph_ref is not None and not to_current:
        raise typer.BadParameter("--graph goes with --upgrade")
    if not to_current:
        return
    shell = reading_shell(repo, config)
    run = shell.store.load(run_id)
    graph = plan_run(repo, config or own_config(repo), graph_ref or run.graph, None).graph
    if at is not None and not graph.has_stage(at):
        raise EventRejected(run_id, run.status.value, "Resume", f"graph {graph.name!r} has no stage {at!r}")
    moved = upgrade(shell, run_id, graph)
    typer.echo(f"run {run_id} moved to graph {moved.graph} ({moved.graph_hash[:19]})", err=True)


def budget(run_id: RunArg, raises: Raises, repo: Repo = Path("."), as_json: AsJson = False) -> None:
    """Raise the limits of a run a budget stopped; it goes on where it stopped, paying nothing twice."""
    from app.engine import events as ev
    from app.engine.raises import RaiseInvalid, parse_raise
    from app.local.launch import CommandLine

    try:
        amounts = parse_raise(raises)
    except RaiseInvalid as exc:
        refuse(str(exc))
    continue_run(run_id, repo, CommandLine(None, None, None), "budget", as_json, ev.BudgetRaised, amounts=amounts)


def check_calls(shell: LocalShell, run_id: str) -> None:
    """Before a continuing command drives a run on: its agents and check programs are there."""
    from app.local.preflight import calls_findings, calls_of_graph

    run = shell.store.load(run_id)
    found = calls_findings(calls_of_graph(shell.config, shell.graph_of(run)), shell.repo, run.branch)
    refuse_on_errors(found, f"run {run_id} cannot go on; it was left as it was")


def continuing_shell(
    repo: Path, run_id: str, line: CommandLine, command: str, runs_agents: bool = True
) -> tuple[LocalShell, Launch | None]:
    """The shell a continuing command drives ``run_id`` with: the launch recorded in the run, with what the
    command line overrides; and that override, to record with the command's event (None if nothing)."""
    from app.local.config import ConfigError, LocalConfig, missing_agent_problem
    from app.local.launch import changed_config_note, continue_launch, launch_in_force
    from app.local.missions import now
    from app.local.shell import LocalShell

    reader = LocalShell(repo, LocalConfig())
    run = reader.store.load(run_id)
    settings, gates, relaunch = continue_launch(run, line, command, now())
    recorded = launch_in_force(run)
    note = changed_config_note(recorded) if recorded and line.config is None else None
    if note:
        typer.echo(note, err=True)
    problem = missing_agent_problem(settings, reader.graph_of(run)) if runs_agents else None
    if problem:
        unrecorded = "" if recorded else " (it was started before Interlock recorded how runs are launched)"
        raise ConfigError(f"run {run_id} cannot go on{unrecorded}: {problem}")
    return shell_with(repo, settings, gates), relaunch


def continue_run(
    run_id: str,
    repo: Path,
    line: CommandLine,
    command: str,
    as_json: bool,
    kind: type[ev.Event],
    **fields: Any,
) -> None:
    """Apply a person's event to a run and drive it on, exactly as ``run`` does, with the agents the run was
    launched with (or what ``line`` overrides, recorded in the same transition); print where it stopped."""
    from app.engine import events as ev
    from app.local.launch import person
    from app.local.missions import now
    from app.local.teamrun import refuse_moved_on, team_turn

    shell, relaunch = continuing_shell(repo, run_id, line, command, runs_agents=kind not in (ev.Deliver, ev.Abandon))
    drives_agents = kind not in (ev.Abandon, ev.Deliver)  # these call no agent
    if drives_agents:
        check_calls(shell, run_id)
    if relaunch is not None:  # said once the override passed its checks: a refused one changes nothing
        shell.progress.line(f"{command} overrides the run's {', '.join(relaunch.changed)}, from now on")
    name = kind.__name__.lower()
    seen = shell.store.load(run_id)  # what the person saw: the command applies to it, not to what follows

    def event(run: Run) -> ev.Event:
        refuse_moved_on(seen, run, command)
        return kind(key=f"{run.id}/{name}/{run.version}", at=now(), by=person(), launch=relaunch, **fields)

    with team_turn(shell, run_id) if drives_agents else contextlib.nullcontext():  # the team's queue (SPEC U5)
        run = shell.send(run_id, event)
    emit_run(run, shell, as_json)


@dataclass(frozen=True)
class Said:
    """One value a continuing command reads beyond the run and the options they all share: the event field it
    fills (None: read by the command's step before the event, as ``resume --upgrade``), and the command-line
    parameter that reads it (its name, typer's annotation, default)."""

    field: str | None
    name: str
    annotation: Any
    default: Any = inspect.Parameter.empty

    def parameter(self) -> inspect.Parameter:
        return inspect.Parameter(self.name, KEYWORD, annotation=self.annotation, default=self.default)


KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def continuing_options(
    run_id: RunArg,
    repo: Repo = Path("."),
    agent: AgentOpt = None,
    config: ConfigOpt = None,
    gates: GatesOpt = None,
    as_json: AsJson = False,
) -> None:
    """The parameters every command that continues a run takes; only its signature is used (by
    ``continue_with``), so that the commands differ in what they say, not in how they are declared."""


def words(value: str) -> str:
    """An amendment says what to change: an empty or blank ``--note`` is refused before anything runs (issue 28)."""
    if not value.strip():
        raise typer.BadParameter("the changes requested need words: --note 'what to change'")
    return value


def continue_with(cli: typer.Typer, name: str, doc: str, kind: str, *said: Said, before: Before | None = None) -> None:
    """Register the command ``name``: apply a person's event of ``kind`` (the name of its class in
    ``app.engine.events``, loaded when the command runs) to the run and drive it on (``continue_run``), with the
    options of ``continuing_options`` and, right after the run, what ``said`` reads (into the event, or for the
    step ``before`` takes first). Typer reads the parameters from the signature made here."""

    def command(
        run_id: str,
        repo: Path,
        agent: str | None,
        config: Path | None,
        gates: GateMode | None,
        as_json: bool,
        **value: Any,
    ) -> None:
        from app.engine import events as ev
        from app.local.launch import CommandLine

        if before is not None:
            before(run_id, repo, config, value)
        fields = {one.field: value[one.name] for one in said if one.field is not None}
        event_kind = getattr(ev, kind)
        continue_run(run_id, repo, CommandLine(agent, config, gates), name, as_json, event_kind, **fields)

    shared = list(inspect.signature(continuing_options, eval_str=True).parameters.values())
    parameters = [shared[0], *(one.parameter() for one in said), *shared[1:]]
    cast(Any, command).__signature__ = inspect.Signature(parameters, return_annotation=None)
    command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    command.__doc__ = doc
    cli.command(name)(command)
