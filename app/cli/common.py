"""What the ``interlock`` command modules share, so that none of them imports another (issue 29).

The option types every command that takes them declares alike, the helpers two command groups both use (the
shell a command reads or drives a run with, the print of a run, the refusal of a run that cannot start or go on,
the App's installation on a repository, the findings' report), and the mapping of every failure to a message and
an exit code. Exit codes are part of the interface: 0 success, 1 when what was checked is invalid, 2 for usage
errors and unreadable input, 70 for an unexpected failure (said in one line; ``INTERLOCK_DEBUG=1`` shows the
traceback). Like every command module, this one imports what a helper needs when it runs (app/cli/assemble.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from app.engine.errors import GraphInvalid, InterlockError
from app.engine.findings import Finding, FindingCode, Severity, error, has_errors, problems
from app.engine.gatemode import GateMode

if TYPE_CHECKING:
    from app.engine.graph.model import Graph
    from app.engine.record import Run
    from app.github.client import GitHubApp, Installation
    from app.local.config import LocalConfig
    from app.local.shell import LocalShell

EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
# click's base error, as the typer installed raises it (recent typers carry their own copy of click)
CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
REPOSITORY_NAME = re.compile(r"^[\w.-]+/[\w.-]+$")

RunArg = Annotated[str, typer.Argument(metavar="RUN")]
GraphArg = Annotated[Path, typer.Argument(metavar="GRAPH", help="Graph file.")]
Repo = Annotated[Path, typer.Option("--repo", help="The git repository (default: the current folder).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON with the run record's field names.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent: claude, codex, aider, demo, or a command.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Local run configuration (YAML).")]
GatesOpt = Annotated[GateMode | None, typer.Option("--gates", help="ask (terminal), approve (autopilot), stop.")]

# A mission job installs the core alone (pyproject.toml's ``dependencies``: the action's install is measured in
# seconds, see docs/github/action.md); the webhook service, its web board and signing in as the GitHub App
# need the ``service`` extra (FastAPI, uvicorn, githubkit's App auth with PyJWT, cryptography, and the Redis client
# replicas share their quota through). Those imports stand inside the commands that need them, so a core install
# runs every job command, and a service command run there fails with the line to type rather than an internal
# error. These are the top-level modules of the extra that app/ imports; tests/test_extras.py checks that every
# import in app/ of a package only the extra installs is named here.
SERVICE_MODULES = frozenset({"fastapi", "starlette", "uvicorn", "cryptography", "jwt", "redis"})
INSTALL_SERVICE = "pip install 'interlock[service]'"


def refuse(message: str) -> NoReturn:
    """A usage error in one line, exit 2, before anything is created."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def reading_shell(repo: Path, config: Path | None = None) -> LocalShell:
    """The shell a command reads, stops or moves a run with: the configuration of ``config`` (default: the
    defaults), gates that stop; it calls no agent itself."""
    from app.local.config import load_config

    return shell_with(repo, load_config(config), GateMode.STOP)


def shell_with(repo: Path, settings: LocalConfig, gates: GateMode | None) -> LocalShell:
    """A shell driving runs with ``settings``; gates not chosen anywhere ask on a terminal, else stop."""
    from app.local.progress import Progress
    from app.local.shell import LocalShell

    interactive = sys.stdin.isatty()
    mode = gates or (GateMode.ASK if interactive else GateMode.STOP)
    return LocalShell(repo, settings, mode, Progress(), ask=input if interactive else None)


def emit_run(run: Run, shell: LocalShell, as_json: bool) -> None:
    """The run as it stands, with who drives it and, at a gate, the answer to approve (beside the record's
    fields in ``--json``: ``runner`` and ``gate_answer``)."""
    from app.local.reports import gate_answer, render_status

    runner, answer = shell.runner(run), gate_answer(run, shell.store)
    if as_json:
        typer.echo(json.dumps({**run.journal(), "runner": runner, "gate_answer": answer}, indent=2))
    else:
        typer.echo(render_status(run, shell.graph_of(run), runner, answer))


def refuse_on_errors(found: list[Finding], what: str) -> None:
    """The preflight's answer (``run`` before it starts, a continuing command before it drives a run on): every
    problem with its fix, and exit 2 when one is an error; warnings alone are said and let it go on."""
    shown = problems(found)
    if has_errors(shown):
        typer.echo(f"error: {what}:", err=True)
    for finding in shown:
        prefix = "" if has_errors(shown) else "warning: "
        typer.echo(f"  - {prefix}{finding.subject}: {finding.message}", err=True)
        typer.echo(f"    fix: {finding.fix}", err=True)
    if has_errors(shown):
        raise typer.Exit(EXIT_USAGE)


def missing_agent(settings: LocalConfig, graph: Graph) -> list[Finding]:
    """No agent named for a step: reported with the rest, so one refusal lists every problem."""
    from app.local.config import WAYS_TO_NAME_AN_AGENT, missing_agent_problem

    problem = missing_agent_problem(settings, graph)
    if problem is None:
        return []
    message = problem.split(f"; {WAYS_TO_NAME_AN_AGENT}")[0]
    return [error(FindingCode.AGENT_SPEC, "agent", message, WAYS_TO_NAME_AN_AGENT.replace("\n", "\n    "))]


def render(findings: list[Finding], title: str) -> str:
    """Findings as ``doctor`` and ``config check`` print them: one line each, its fix below, then the counts."""
    colours = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.OK: "green"}
    lines = [title]
    for finding in findings:
        severity = typer.style(f"{finding.severity.value:<7}", fg=colours[finding.severity])
        lines.append(f"{severity} {finding.code.value:<16} {finding.subject}: {finding.message}")
        if finding.fix and finding.severity is not Severity.OK:
            first, _, more = finding.fix.partition("\n")  # a fix of several lines stays in its column
            lines.append(f"{'':24} fix: {first}")
            lines += [f"{'':29}{line}" for line in textwrap.dedent(more).splitlines()]
    counts = {severity: sum(f.severity is severity for f in findings) for severity in Severity}
    lines.append(f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), {counts[Severity.OK]} ok")
    return "\n".join(lines)


def app_installation(repo: str) -> Installation:
    """The App's installation on ``repo``, from its credentials in the environment (as ``doctor --github``)."""
    app, installation = _installed(repo)
    return app.installation(installation["id"])


def app_slug_on(repo: str) -> str | None:
    """The slug of the App whose credentials are in the environment, as its installation on ``repo`` names it: its
    bot is ``<slug>[bot]`` (``interlock verify`` reads only the App's own anchors, SPEC J6)."""
    _, installation = _installed(repo)
    slug = installation.get("app_slug")
    return str(slug) if slug else None


def _installed(repo: str) -> tuple[GitHubApp, dict[str, Any]]:
    from app.github.client import GitHubApp
    from app.webhooks.settings import SettingsError, settings_from_env

    if not REPOSITORY_NAME.match(repo):
        raise InterlockError(f"--repo takes OWNER/NAME, not {repo!r}")
    try:  # the webhook secret does not matter to API calls
        settings = settings_from_env({**os.environ, "GITHUB_WEBHOOK_SECRET": "-"})
    except SettingsError as exc:
        raise InterlockError("; ".join(exc.problems)) from None
    app = GitHubApp(settings.app_identity())
    installation = app.as_app().repo_installation(repo)
    if installation is None or not isinstance(installation.get("id"), int):
        raise InterlockError(f"the App is not installed on {repo} (or it does not exist): install it, then check again")
    return app, installation


def run_command_line(cli: typer.Typer) -> NoReturn:
    """Run ``cli`` on this process's arguments; every failure a message and an exit code, never a traceback."""
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


def missing_extra(exc: BaseException) -> str | None:
    """The message for a module of the service extra that is not installed; None for any other failure."""
    module = (exc.name or "").partition(".")[0] if isinstance(exc, ModuleNotFoundError) else ""
    if module not in SERVICE_MODULES:
        return None
    return f"this command needs Interlock's service extra ({module} is not installed here): {INSTALL_SERVICE}"


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


def _masked(text: str) -> str:
    """``text`` through the one redactor, loaded only when a failure is shown."""
    from app.redact import Redactor

    return Redactor().text(text)


def _show_usage_error(exc: Any) -> NoReturn:
    """Click's error as click shows it (plain, as the help is), its message masked by the one redactor first: it
    may quote an argument, such as a key block given where an option was expected."""
    exc.message = _masked(str(exc.message))
    exc.show()
    sys.exit(exc.exit_code)
