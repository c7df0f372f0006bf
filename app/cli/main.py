"""The ``interlock`` command. Each command is a thin shell: read input, call the engine, print.

Exit codes are part of the interface: 0 success, 1 when what was checked is invalid, 2 for usage errors
and unreadable input. No command prints a Python traceback to a user (set ``INTERLOCK_DEBUG=1`` to see
one); an unexpected failure says so in one line and exits 70.

Each command imports what it needs when it runs, never here (issue 16, item 5): the help and a command's options
come from these modules alone, so ``interlock --help`` loads no pydantic model, HTTP client or git binding, and
``validate`` only the engine's graph. tests/test_cli_startup.py checks that importing this module stays light.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from app.cli.archive import register_archive
from app.cli.budget import register as register_budget
from app.cli.config import register as register_config
from app.cli.doctor import register as register_doctor
from app.cli.extras import missing_extra
from app.cli.migrate import register_migrate
from app.cli.runs import register
from app.cli.simulate import register as register_simulate
from app.cli.upgrade import register_resume
from app.cli.verify import register_verify
from app.engine.errors import GraphFileError, GraphInvalid, InterlockError, TeamInvalid

if TYPE_CHECKING:
    from app.engine.team import Team
    from app.graphset import FileReport

EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
# click's base error, as the typer installed raises it (recent typers carry their own copy of click)
CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

cli = typer.Typer(
    name="interlock",
    help="Deterministic multi-agent workflows: agents do the steps, engine code routes the run.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: rich's help formatter costs more than the rest of a start (issue 16)
)


@cli.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="Graph files or folders (graphsets).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    team_file: Annotated[
        Path | None, typer.Option("--team", help="Team roster (YAML or JSON) for capability checks.")
    ] = None,
    cost: Annotated[bool, typer.Option("--cost", help="Also print each graph's worst case and cheapest path.")] = False,
) -> None:
    """Validate graphs: every error and warning of every file (exit 1 if any file has an error)."""
    from app.cli.simulate import cost_json, print_costs
    from app.graphset import graph_files, validate_file

    team = _read_team(team_file) if team_file else None
    reports: list[FileReport] = []
    unreadable: list[str] = []
    for path in paths:
        try:
            files = graph_files(path)
        except GraphFileError as exc:
            unreadable.append(str(exc))
            continue
        for file in files:
            try:
                reports.append(validate_file(file, team))
            except GraphFileError as exc:
                unreadable.append(str(exc))
    if as_json:
        typer.echo(json.dumps({"files": [cost_json(r) if cost else r.to_json() for r in reports]}, indent=2))
    else:
        _print_reports(reports)
        if cost:
            print_costs(reports)
    for problem in unreadable:
        typer.echo(f"error: cannot read {problem}", err=True)
    if unreadable:
        raise typer.Exit(EXIT_USAGE)
    if any(not report.validation.valid for report in reports):
        raise typer.Exit(EXIT_INVALID)


@cli.command()
def contract(
    graph_path: Annotated[Path, typer.Argument(metavar="GRAPH", help="Graph file.")],
    stage: Annotated[str, typer.Argument(help="Stage of the node.")],
) -> None:
    """Print the verdict contract that the missions of STAGE receive (nothing when there is none)."""
    from app.engine.graph.contract import ContractKind, verdict_contract
    from app.graphset import load_graph

    graph = load_graph(graph_path)
    if not graph.has_stage(stage):
        _usage_error(
            f"graph {graph.name!r} has no stage {stage!r}; stages: {', '.join(node.stage for node in graph.nodes)}"
        )
    terms = verdict_contract(graph, stage)
    if terms.kind is ContractKind.CHECK:
        typer.echo(f"(stage {stage!r} runs a check: its exit code is the verdict, no contract)", err=True)
    elif terms.text:
        typer.echo(terms.text)


@cli.command()
def draw(
    graph_path: Annotated[Path, typer.Argument(metavar="GRAPH", help="Graph file.")],
    current: Annotated[str | None, typer.Option(help="Stage to highlight.")] = None,
    visits: Annotated[str | None, typer.Option(help="Visit counts: stage=n,stage=n.")] = None,
) -> None:
    """Print the graph as a Mermaid flowchart (GitHub renders it in issues and Markdown)."""
    from app.engine.graph.mermaid import draw_mermaid
    from app.graphset import load_graph

    graph = load_graph(graph_path)
    counts = _parse_visits(visits) if visits is not None else None
    for stage in [*([current] if current else []), *(counts or {})]:
        if not graph.has_stage(stage):
            _usage_error(f"graph {graph.name!r} has no stage {stage!r}")
    typer.echo(draw_mermaid(graph, current, counts), nl=False)


@cli.command()
def demo(
    keep: Annotated[Path | None, typer.Option("--keep", help="Make the demo repository here and keep it.")] = None,
) -> None:
    """Run the feature graph on a fresh demo repository with a scripted agent: no network, a few seconds."""
    from app.graphset import library_dirs
    from app.local.demo import run_demo

    typer.echo(run_demo(library_dirs(), keep))


@cli.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
) -> None:
    """Run the GitHub App's webhook service (deliveries at POST /api/github/webhooks)."""
    import uvicorn

    from app.webhooks.service import create_app
    from app.webhooks.settings import settings_from_env

    settings = settings_from_env()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(settings), host=host, port=port, log_level=settings.log_level)


@cli.command()
def redeliver(
    since: Annotated[str, typer.Option(help="How far back to look: 30m, 1h, 2d.")] = "1h",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be redelivered.")] = False,
) -> None:
    """Ask GitHub to redeliver the app's failed webhook deliveries (it never does by itself)."""
    from app.github.client import GitHubApp
    from app.github.redeliver import failed_deliveries, parse_since
    from app.github.redeliver import redeliver as send_again
    from app.webhooks.settings import settings_from_env

    window = parse_since(since)
    app = GitHubApp(settings_from_env().app_identity()).as_app()
    failed = failed_deliveries(app, window)
    for delivery in failed:
        typer.echo(f"{delivery.delivered_at}  {delivery.event:<24} {delivery.guid}  {delivery.status}")
    if not dry_run:
        send_again(app, failed)
    typer.echo(f"{len(failed)} failed deliveries {'found' if dry_run else 'redelivered'} in the last {since}")


@cli.command()
def step(
    run: Annotated[str, typer.Option("--run", help="The run id (the workflow's `run` input).")],
    mission: Annotated[int, typer.Option("--mission", help="The mission's number (the `mission` input).")],
    phase: Annotated[str, typer.Option(help="work (the agent's job), deliver (the pushing job), or all.")] = "all",
    handoff: Annotated[Path | None, typer.Option(help="Folder of the outcome handed from work to deliver.")] = None,
    work_result: Annotated[str, typer.Option(help="deliver: how the work job ended (needs.work.result).")] = "",
    agent: Annotated[str, typer.Option(envvar="INTERLOCK_AGENT", help="Agent: preset, openai:MODEL, command.")] = (
        "claude"
    ),
    workdir: Annotated[Path, typer.Option(help="work: the checkout of the repository.")] = Path("."),
    remote: Annotated[str, typer.Option(help="The repository's remote: a name in the checkout, or a URL.")] = (
        "origin"
    ),
    timeout: Annotated[float, typer.Option(help="Seconds the agent may take.")] = 3600.0,
) -> None:
    """Run one dispatched mission (in Actions jobs): agent, commit, push, mission record.

    The agent never gets the write token (INTERLOCK_PUSH_TOKEN, else GITHUB_TOKEN in the deliver phase);
    INTERLOCK_READ_TOKEN, if set, is what it gets as GITHUB_TOKEN."""
    from app.runner.job import JobSettings, Phase, job_log, run_step

    if phase not in tuple(Phase):
        _usage_error(f"--phase must be one of {', '.join(Phase)}, not {phase!r}")
    if phase == Phase.WORK:
        from app.runner.isolate import isolate

        isolate()  # the agent's parent starts with nothing the agent may not have (app/runner/isolate.py)
    settings = JobSettings(workdir.resolve(), run, mission, agent=agent, timeout_s=timeout, remote=remote)
    result = run_step(Phase(phase), settings, handoff.resolve() if handoff else None, work_result)
    typer.echo(job_log(result, mission))


@cli.command()
def handle(
    finished: Annotated[
        str | None, typer.Option("--finished", help="Apply this mission job's end: success, failure, cancelled.")
    ] = None,
) -> None:
    """App-less mode: apply the workflow's event to its run, with the job's token (GITHUB_TOKEN).

    Reads GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_RUN_ID and GITHUB_API_URL as Actions sets them. The
    run id keys the event, so re-running the same workflow run applies it once."""
    import os

    from app.graphset import library_dirs
    from app.webhooks.appless import TokenApp, actions_event, handle_event

    env = os.environ
    missing = [name for name in ("GITHUB_EVENT_PATH", "GITHUB_RUN_ID", "GITHUB_TOKEN") if not env.get(name)]
    if missing:
        _usage_error(f"{', '.join(missing)} not set: `interlock handle` runs in a GitHub Actions job")
    event, payload, key = actions_event(env, finished)
    app = TokenApp(env["GITHUB_TOKEN"], env.get("GITHUB_API_URL", "https://api.github.com"))
    outcome = handle_event(event, payload, key, app, library_dirs())
    typer.echo(f"{event}.{payload.get('action', '')}: {outcome.value}")


def _parse_visits(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        stage, sep, number = item.partition("=")
        if not sep or not (number.strip().isascii() and number.strip().isdigit()) or len(number.strip()) > 9:
            _usage_error(f"--visits takes stage=n pairs separated by commas; cannot read {item!r}")
        counts[stage.strip()] = int(number)
    return counts


def _read_team(path: Path) -> Team:
    from app.graphset import load_team

    try:
        return load_team(path)
    except TeamInvalid as exc:
        _usage_error(str(exc))


def _print_reports(reports: list[FileReport]) -> None:
    for report in reports:
        outcome = report.validation
        if outcome.valid:
            status = typer.style("valid", fg="green")
        else:
            status = typer.style(f"INVALID ({len(outcome.errors)} error(s))", fg="red", bold=True)
        extra = f", {len(outcome.warnings)} warning(s)" if outcome.warnings else ""
        typer.echo(f"{report.path}: {status}{extra}")
        for issue in outcome.issues:
            kind = typer.style("error", fg="red") if issue.is_error else typer.style("warning", fg="yellow")
            where = f" [stage {_printable(issue.stage)}]" if issue.stage is not None else ""
            where += f" [edge {issue.edge}]" if issue.edge is not None else ""
            typer.echo(f"  {kind} {issue.code}{where}: {issue.message}")
    valid = sum(report.validation.valid for report in reports)
    typer.echo(f"{len(reports)} file(s): {valid} valid, {len(reports) - valid} invalid")


def _printable(name: str) -> str:
    """``name`` as a terminal can show it: a stage name with a control character or a surrogate escaped."""
    return name if name.isprintable() else repr(name)[1:-1]


def _usage_error(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _undecodable(args: list[str]) -> str | None:
    """Python turns argument bytes that are not UTF-8 into lone surrogates, which no journal, ref or terminal
    can hold: a run started with one failed half-way. Such an argument is refused before any command runs."""
    for position, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "backslashreplace").decode()
            return f"argument {position} ({shown}) is not UTF-8 text: give every argument in UTF-8"
    return None


def _report_graph_invalid(exc: GraphInvalid) -> None:
    typer.echo(f"error: {exc.source} is not a valid graph:", err=True)
    for issue in exc.issues:
        typer.echo(f"  {issue.code}: {issue.message}", err=True)


register(cli)
register_doctor(cli)
register_config(cli)
register_budget(cli)
register_verify(cli)
register_migrate(cli)
register_archive(cli)
register_resume(cli)
register_simulate(cli)


def _masked(text: str) -> str:
    """``text`` through the one redactor, loaded only when a failure is shown."""
    from app.redact import Redactor

    return Redactor().text(text)


def _show_usage_error(exc: Any) -> None:
    """Click's error as click shows it (plain, as the help is), its message masked by the one redactor first: it
    may quote an argument, such as a key block given where an option was expected."""
    exc.message = _masked(str(exc.message))
    exc.show()
    sys.exit(exc.exit_code)


def main() -> None:
    """Console entry point: maps every failure to a message and an exit code, never a traceback."""
    problem = _undecodable(sys.argv[1:])
    if problem:
        typer.echo(f"error: {problem}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        result = cli(standalone_mode=False)  # click's own errors come back here, to be masked before shown
        code = result if isinstance(result, int) else 0
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        code = 1
    except CLICK_ERROR as exc:
        _show_usage_error(exc)
    except GraphInvalid as exc:
        _report_graph_invalid(exc)
        code = EXIT_INVALID
    except InterlockError as exc:
        typer.echo(_masked(f"error: {exc}"), err=True)
        code = EXIT_USAGE
    except Exception as exc:
        if os.environ.get("INTERLOCK_DEBUG"):
            raise
        extra = missing_extra(exc)  # a service command in a core install (a mission job's): the line to type
        detail = _masked(f"{type(exc).__name__}: {exc}")  # errors quote commands, output, URLs
        internal = f"internal error: {detail} (set INTERLOCK_DEBUG=1 for details)"
        typer.echo(f"error: {extra}" if extra else internal, err=True)
        code = EXIT_USAGE if extra else EXIT_INTERNAL
    sys.exit(code)
