"""``interlock run`` and ``interlock stop``: start a graph on a local repository, and stop a run.

``run`` goes through the preflight first: a problem found there costs nothing, since the command refuses before
it makes the run branch or the journal, listing every problem with its fix (exit 2). Like the commands that
continue a run (``app/cli/continuing.py``), it exits 0 whatever status the run stopped in: non-zero means the
command itself could not work.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.cli import common
from app.cli.common import AgentOpt, AsJson, ConfigOpt, GatesOpt, Repo, RunArg

if TYPE_CHECKING:  # loaded by the commands when they run (issue 16, item 5: app/cli/assemble.py)
    from collections.abc import Callable

    from app.engine.gatemode import GateMode
    from app.engine.graph.model import Graph, Policy
    from app.engine.record import Launch
    from app.local.shell import LocalShell
    from app.local.teamrun import RunPlan


def register(cli: typer.Typer) -> None:
    cli.command("run")(run_graph)
    cli.command("stop")(stop)


def run_graph(
    graph_ref: Annotated[
        str | None,
        typer.Argument(metavar="[GRAPH]", help="Graph file or name (default: the team's defaultGraph)."),
    ] = None,
    request: Annotated[str | None, typer.Option("--request", help="The request text.")] = None,
    request_file: Annotated[Path | None, typer.Option("--request-file", help="Read the request from a file.")] = None,
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
    from app.local.shell import new_run_id
    from app.local.teamrun import team_turn
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
    plan, shell, launch = prepare_run(repo, config, graph_ref, team, (agent, gates, base, limits))
    run_id = run_id or new_run_id()  # named before the team's place, which records the run's agent file
    with team_turn(shell, run_id, wait=not no_wait):  # a place among the team's runs (SPEC U5)
        started = shell.start(plan.graph, title.strip() or "(no title)", body.strip(), run_id, launch)
    common.emit_run(started, shell, as_json)


def prepare_run(
    repo: Path,
    config: Path | None,
    graph_ref: str | None,
    team: str | None,
    chosen: tuple[str | None, GateMode | None, str | None, Policy | None],
) -> tuple[RunPlan, LocalShell, Launch]:
    """The plan of a new run, the shell to start it with and the launch it records, once the preflight passed
    (else exit 2, nothing created). ``chosen``: the command line's agent, gates, base and policy."""
    from app.local.teamrun import own_config, plan_run

    agent, gates, base, limits = chosen
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
    return plan, shell, launched[-1]


def stop(run_id: RunArg, repo: Repo = Path("."), as_json: AsJson = False) -> None:
    """Stop a run; a run executing in another process stops at its next check."""
    from app.local.shell import stop_event

    shell = common.reading_shell(repo)
    common.emit_run(shell.send(run_id, stop_event, drive=False), shell, as_json)


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


def check_run_id(run_id: str) -> None:
    """Refuse a ``--run-id`` that cannot name the run's branch by git's own rules (``git check-ref-format``),
    before the branch, worktree or journal exist: a later git failure would leave a half-made run."""
    from app.gitaccess import on_machine_env, run_git

    ref = f"refs/heads/interlock/{run_id}"
    fit = run_id.isprintable() and run_git(["check-ref-format", ref], None, on_machine_env()).returncode == 0
    if not fit:
        common.refuse(f"--run-id {run_id!r} cannot name the run's git branch: see `git help check-ref-format`")


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
        common.refuse(f"cannot read --request-file {exc}")


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
    return common.shell_with(repo, settings, chosen), make_launch(settings, chosen, source, "run", now())


def preflight_shell(
    graph: Graph, repo: Path, config: Path | None, agent: str | None, base: str | None, make: Callable[[], LocalShell]
) -> LocalShell:
    """The shell of a new run, once everything the run needs was checked; else exit 2, nothing created."""
    from app.local.configcheck import config_findings
    from app.local.gitops import GitProblem
    from app.local.preflight import calls_of_graph, run_findings

    reading = config_findings(config)
    shell = None
    if reading.settings is not None:
        with contextlib.suppress(GitProblem):  # not a repository: said below, with everything else
            shell = make()  # the settings exactly as the run will have them; this creates nothing
    overrides = {key: value for key, value in (("agent", agent), ("base", base)) if value}
    settings = shell.config if shell else reading.usable.model_copy(update=overrides)
    found = reading.findings + run_findings(repo, settings, calls_of_graph(settings, graph))
    found += common.missing_agent(settings, graph)
    common.refuse_on_errors(found, "the run cannot start; nothing was created and nothing charged")
    return shell or make()
