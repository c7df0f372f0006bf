"""``interlock`` commands that run graphs on a local repository, and report on those runs.

Every command takes ``--repo DIR``; reporting commands take ``--json`` and print the record's field names.
``run`` and the commands that continue a run exit 0 whatever status the run stopped in: non-zero means the
command itself could not work.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer

from app.cli.remote import Reported, github_repository
from app.engine.gatemode import GateMode

if TYPE_CHECKING:  # loaded by the commands when they run (issue 16, item 5: app/cli/main.py)
    from app.engine import events as ev
    from app.engine.graph.model import Policy
    from app.engine.record import Launch, Run
    from app.local.config import LocalConfig
    from app.local.launch import CommandLine
    from app.local.shell import LocalShell
    from app.local.teamrun import RunPlan

Repo = Annotated[Path, typer.Option("--repo", help="The git repository (default: the current folder).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON with the run record's field names.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent: claude, codex, aider, demo, or a command.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Local run configuration (YAML).")]
GatesOpt = Annotated[GateMode | None, typer.Option("--gates", help="ask (terminal), approve (autopilot), stop.")]


def parse_policy(text: str) -> Policy:
    from pydantic import ValidationError

    from app.engine.graph.model import Policy

    names = {
        "max_calls": "maxCalls",
        "max_attempts": "maxAttempts",
        "max_units": "maxUnits",
        "max_cost_usd": "maxCostUsd",
    }
    values: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        key = names.get(key.strip(), key.strip())
        if not sep or key not in names.values():
            raise typer.BadParameter(
                f"cannot read {item!r}: use max_calls=N,max_attempts=N,max_units=N", param_hint="--policy"
            )
        try:
            values[key] = float(value) if key in ("maxUnits", "maxCostUsd") else int(value)
        except ValueError:
            raise typer.BadParameter(f"{key} needs a number, got {value!r}", param_hint="--policy") from None
    try:
        return Policy.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise typer.BadParameter(problems, param_hint="--policy") from None


def refuse(message: str) -> NoReturn:
    """A usage error in one line, exit 2, before anything is created."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def check_run_id(run_id: str) -> None:
    """Refuse a ``--run-id`` that cannot name the run's branch by git's own rules (``git check-ref-format``),
    before the branch, worktree or journal exist: a later git failure would leave a half-made run."""
    from app.gitaccess import on_machine_env, run_git

    ref = f"refs/heads/interlock/{run_id}"
    fit = run_id.isprintable() and run_git(["check-ref-format", ref], None, on_machine_env()).returncode == 0
    if not fit:
        refuse(f"--run-id {run_id!r} cannot name the run's git branch: see `git help check-ref-format`")


def read_request(request: str | None, path: Path | None) -> str:
    """The request: the text of ``--request``, else the file of ``--request-file`` (one of them is given)."""
    from app.inputfile import InputUnreadable, read_input_text

    if request is not None:
        return request
    if path is None:
        raise typer.BadParameter("give exactly one of --request and --request-file")
    try:
        return read_input_text(path)
    except InputUnreadable as exc:
        refuse(f"cannot read --request-file {exc}")


def make_shell(
    repo: Path,
    agent: str | None,
    config: Path | None,
    gates: GateMode | None,
    base: str | None = None,
    policy: Policy | None = None,
) -> LocalShell:
    from app.local.config import load_config

    settings: LocalConfig = load_config(config)
    updates: dict[str, Any] = {}
    if agent:
        updates["agent"] = agent
    if base:
        updates["base"] = base
    if policy is not None:
        updates["policy"] = policy
    return shell_with(repo, settings.model_copy(update=updates), gates or settings.gates)


def shell_with(repo: Path, settings: LocalConfig, gates: GateMode | None) -> LocalShell:
    """A shell driving runs with ``settings``; gates not chosen anywhere ask on a terminal, else stop."""
    from app.local.progress import Progress
    from app.local.shell import LocalShell

    interactive = sys.stdin.isatty()
    mode = gates or (GateMode.ASK if interactive else GateMode.STOP)
    return LocalShell(repo, settings, mode, Progress(), ask=input if interactive else None)


def launch_shell(
    repo: Path, agent: str | None, plan: RunPlan, gates: GateMode | None, base: str | None, policy: Policy | None
) -> tuple[LocalShell, Launch]:
    """The shell of ``run`` and the launch it records: the configuration as resolved, the file and its hash."""
    from app.local.launch import make_launch
    from app.local.missions import now

    file, settings = plan.file, plan.settings
    updates = {"agent": agent, "base": base, "policy": policy}
    settings = settings.model_copy(update={key: value for key, value in updates.items() if value is not None})
    chosen = gates or settings.gates
    source = (str(file.path), file.sha256) if file else (None, None)
    return shell_with(repo, settings, chosen), make_launch(settings, chosen, source, "run", now())


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


def emit_run(run: Run, shell: LocalShell, as_json: bool) -> None:
    """The run as it stands, with who drives it and, at a gate, the answer to approve (beside the record's
    fields in ``--json``: ``runner`` and ``gate_answer``)."""
    from app.local.reports import gate_answer, render_status

    runner, answer = shell.runner(run), gate_answer(run, shell.store)
    if as_json:
        typer.echo(json.dumps({**run.journal(), "runner": runner, "gate_answer": answer}, indent=2))
    else:
        typer.echo(render_status(run, shell.graph_of(run), runner, answer))


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
    from app.cli.doctor import check_calls
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
    """The one value a continuing command reads beyond the run and the options they all share: the event
    field it fills, and the command-line parameter that reads it (its name, typer's annotation, default)."""

    field: str
    name: str
    annotation: Any
    default: Any = inspect.Parameter.empty

    def parameter(self) -> inspect.Parameter:
        return inspect.Parameter(self.name, KEYWORD, annotation=self.annotation, default=self.default)


KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def continuing_options(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
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


ROUTE_AT_HELP = "Route from this stage instead: the one whose edge a refused visit was on."


def continue_with(cli: typer.Typer, name: str, doc: str, kind: str, *said: Said) -> None:
    """Register the command ``name``: apply a person's event of ``kind`` (the name of its class in
    ``app.engine.events``, loaded when the command runs) to the run and drive it on (``continue_run``), with the
    options of ``continuing_options`` and, right after the run, what ``said`` reads into the event. Typer
    reads the parameters from the signature made here."""

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

        fields = {one.field: value[one.name] for one in said}
        event_kind = getattr(ev, kind)
        continue_run(run_id, repo, CommandLine(agent, config, gates), name, as_json, event_kind, **fields)

    shared = list(inspect.signature(continuing_options, eval_str=True).parameters.values())
    parameters = [shared[0], *(one.parameter() for one in said), *shared[1:]]
    cast(Any, command).__signature__ = inspect.Signature(parameters, return_annotation=None)
    command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    command.__doc__ = doc
    cli.command(name)(command)


def register(cli: typer.Typer) -> None:
    @cli.command("run")
    def run_graph(
        graph_ref: Annotated[
            str | None,
            typer.Argument(metavar="[GRAPH]", help="Graph file or name (default: the team's defaultGraph)."),
        ] = None,
        request: Annotated[str | None, typer.Option("--request", help="The request text.")] = None,
        request_file: Annotated[
            Path | None, typer.Option("--request-file", help="Read the request from a file.")
        ] = None,
        repo: Repo = Path("."),
        agent: AgentOpt = None,
        config: ConfigOpt = None,
        gates: GatesOpt = None,
        base: Annotated[str | None, typer.Option("--base", help="Base branch (default develop).")] = None,
        policy: Annotated[str | None, typer.Option("--policy", help="max_calls=N,max_attempts=N,max_units=N")] = None,
        run_id: Annotated[str | None, typer.Option("--run-id", help="Choose the run id (default: generated).")] = None,
        team: Annotated[str | None, typer.Option("--team", help="The team of teams: that runs it.")] = None,
        no_wait: Annotated[bool, typer.Option("--no-wait", help="Refuse instead of waiting for the team.")] = False,
        as_json: AsJson = False,
    ) -> None:
        """Run a graph on a local repository until it stops (end, gate, question, escalation, stop)."""
        from app.cli.doctor import preflight_shell
        from app.local.shell import new_run_id
        from app.local.teamrun import own_config, plan_run, team_turn
        from app.redact import Redactor

        if (request is None) == (request_file is None):
            raise typer.BadParameter("give exactly one of --request and --request-file")
        if run_id is not None:
            check_run_id(run_id)
        text = read_request(request, request_file)
        # masked whole where it enters, before the split: a key block across the first line break would
        # leave its body, in the request's body, without the BEGIN line that marks it
        title, _, body = Redactor().text(text).strip().partition("\n")
        limits = parse_policy(policy) if policy else None
        path = config or own_config(repo)
        if config is None and path is not None:
            typer.echo(f"configuration: {path} (the repository's own; --config FILE reads another)", err=True)
        plan = plan_run(repo, path, graph_ref, team)
        launched: list[Launch] = []

        def make() -> LocalShell:
            shell, launch = launch_shell(repo, agent, plan, gates, base, limits)
            launched[:] = [launch]
            return shell

        shell = preflight_shell(plan.graph, repo, path, agent, base, make)
        run_id = run_id or new_run_id()  # named before the team's place, which records the run's agent file
        with team_turn(shell, run_id, wait=not no_wait):  # a place among the team's runs (SPEC U5)
            started = shell.start(plan.graph, title.strip() or "(no title)", body.strip(), run_id, launched[-1])
        emit_run(started, shell, as_json)

    continue_with(cli, "deliver", "Go to the end: the run branch is ready for a person to merge.", "Deliver")
    continue_with(cli, "abandon", "Cancel the run (the branch stays).", "Abandon")
    # resume: app/cli/upgrade.py (its --upgrade, SPEC J7)

    @cli.command("stop")
    def stop(
        run_id: Annotated[str, typer.Argument(metavar="RUN")], repo: Repo = Path("."), as_json: AsJson = False
    ) -> None:
        """Stop a run; a run executing in another process stops at its next check."""
        from app.local.shell import stop_event

        shell = make_shell(repo, None, None, GateMode.STOP)
        emit_run(shell.send(run_id, stop_event, drive=False), shell, as_json)

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

    register_reports(cli)


def register_reports(cli: typer.Typer) -> None:
    @cli.command("status")
    def status(
        run_id: Annotated[str, typer.Argument(metavar="RUN")],
        repo: Reported = Path("."),
        draw: Annotated[bool, typer.Option("--draw", help="Add the graph picture.")] = False,
        as_json: AsJson = False,
    ) -> None:
        """A run's status: stage, visits, budget, what a person must do now."""
        from app.cli.remote import remote_status
        from app.engine.graph.mermaid import draw_mermaid

        if name := github_repository(repo):  # --repo OWNER/NAME: the state branch on GitHub (app/cli/remote.py)
            return remote_status(name, run_id, draw, as_json)
        shell = make_shell(repo, None, None, GateMode.STOP)
        run = shell.notice_merge(shell.store.load(run_id))
        emit_run(run, shell, as_json)
        if draw and not as_json:
            typer.echo("\n" + draw_mermaid(shell.graph_of(run), run.stage, run.visits), nl=False)

    @cli.command("board")
    def board(repo: Repo = Path("."), as_json: AsJson = False) -> None:
        """Every run in the repository: origin, current step, state and age."""
        from app.local.reports import board_rows, table

        shell = make_shell(repo, None, None, GateMode.STOP)
        runs = [shell.notice_merge(run) for run in shell.store.list_runs()]
        rows = board_rows(runs, runners={run.id: shell.runner(run) for run in runs})
        typer.echo(
            json.dumps(rows, indent=2)
            if as_json
            else table(rows, ["id", "graph", "origin", "stage", "status", "runner", "age_s", "missions", "title"])
        )

    @cli.command("journey")
    def journey(
        run_id: Annotated[str, typer.Argument(metavar="RUN")],
        repo: Reported = Path("."),
        routing: Annotated[bool, typer.Option("--routing", help="Every routing line, from the journal.")] = False,
        as_json: AsJson = False,
    ) -> None:
        """Every mission of a run: kind, stage, verdict, agent, model, duration, calls, cost; and its decisions."""
        from app.cli.remote import remote_journey
        from app.local.reports import journey_text

        if name := github_repository(repo):
            return remote_journey(name, run_id, routing, as_json)
        shell = make_shell(repo, None, None, GateMode.STOP)
        typer.echo(journey_text(shell.store.load(run_id), shell.store, routing, as_json))

    @cli.command("money")
    def money(
        run_id: Annotated[str, typer.Argument(metavar="RUN")], repo: Reported = Path("."), as_json: AsJson = False
    ) -> None:
        """A run's ledger by category; estimates are labelled."""
        from app.cli.remote import remote_money
        from app.local.reports import money_report

        if name := github_repository(repo):
            return remote_money(name, run_id, as_json)
        run = make_shell(repo, None, None, GateMode.STOP).store.load(run_id)
        typer.echo(json.dumps(run.ledger.json_data(), indent=2) if as_json else money_report(run))
