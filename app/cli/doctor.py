"""``interlock doctor``, and the preflight that ``run`` and the continuing commands go through first.

A problem found here costs nothing: ``run`` refuses before it makes the run branch or the journal, listing
every problem with its fix (exit 2); ``doctor`` checks the same on demand (exit 1 when anything is wrong).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.engine.errors import GraphFileError, InterlockError
from app.engine.findings import Finding, FindingCode, Severity, error, has_errors, ok, problems, warning

if TYPE_CHECKING:  # loaded by the checks when they run, not when the command line starts (app/cli/main.py)
    from collections.abc import Callable

    from app.engine.graph.model import Graph
    from app.local.config import LocalConfig
    from app.local.shell import LocalShell

EXIT_INVALID = 1
EXIT_USAGE = 2
REPOSITORY_NAME = re.compile(r"^[\w.-]+/[\w.-]+$")


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
    found += _missing_agent(settings, graph)
    _refuse_on_errors(found, "the run cannot start; nothing was created and nothing charged")
    return shell or make()


def _missing_agent(settings: LocalConfig, graph: Graph) -> list[Finding]:
    """No agent named for a step: reported with the rest, so one refusal lists every problem."""
    from app.local.config import WAYS_TO_NAME_AN_AGENT, missing_agent_problem

    problem = missing_agent_problem(settings, graph)
    if problem is None:
        return []
    message = problem.split(f"; {WAYS_TO_NAME_AN_AGENT}")[0]
    return [error(FindingCode.AGENT_SPEC, "agent", message, WAYS_TO_NAME_AN_AGENT.replace("\n", "\n    "))]


def check_calls(shell: LocalShell, run_id: str) -> None:
    """Before a continuing command drives a run on: its agents and check programs are there."""
    from app.local.preflight import calls_findings, calls_of_graph

    run = shell.store.load(run_id)
    found = calls_findings(calls_of_graph(shell.config, shell.graph_of(run)), shell.repo, run.branch)
    _refuse_on_errors(found, f"run {run_id} cannot go on; it was left as it was")


def _refuse_on_errors(found: list[Finding], what: str) -> None:
    shown = problems(found)
    if has_errors(shown):
        typer.echo(f"error: {what}:", err=True)
    for finding in shown:
        prefix = "" if has_errors(shown) else "warning: "
        typer.echo(f"  - {prefix}{finding.subject}: {finding.message}", err=True)
        typer.echo(f"    fix: {finding.fix}", err=True)
    if has_errors(shown):
        raise typer.Exit(EXIT_USAGE)


def local_findings(repo: Path, config: Path | None, agent: str | None, graphs: list[Path]) -> list[Finding]:
    """git, the repository and its base, the configuration, every agent it names, the graphs and their checks
    (the library's checks as warnings: they matter only if those graphs are run)."""
    from app.local.configcheck import config_findings
    from app.local.preflight import Calls, calls_findings, calls_of_roster, run_findings

    reading = config_findings(config)
    settings: LocalConfig = reading.usable.model_copy(update={"agent": agent} if agent else {})
    given, found = _graphs(graphs)
    library, library_found = _graphs(_library_folders())
    roster = calls_of_roster(settings, given)
    found = run_findings(repo, settings, roster) + reading.findings + found + library_found
    library_checks = calls_of_roster(settings, library).checks.items()
    more = Calls(checks={line: users for line, users in library_checks if line not in roster.checks})
    return found + _unnamed_agents(settings, given) + calls_findings(more, None, settings.base, checks_as_warnings=True)


def _unnamed_agents(settings: LocalConfig, given: list[tuple[str, Graph]]) -> list[Finding]:
    """Steps no agent is named for, which `run` refuses: errors for each ``--graph``; without one, a warning
    when no agent is named at all (a graph of checks alone needs none)."""
    from app.local.config import WAYS_TO_NAME_AN_AGENT

    if given:
        return [finding for _, graph in given for finding in _missing_agent(settings, graph)]
    if settings.agent or (settings.team and any(role.agent for role in settings.team.roles)):
        return []
    message = "no agent is named: `interlock run` refuses to start a graph with steps until one is"
    return [warning(FindingCode.AGENT_SPEC, "agent", message, WAYS_TO_NAME_AN_AGENT.replace("\n", "\n    "))]


def _library_folders() -> list[Path]:
    from app.graphset import library_dirs

    seen: dict[Path, None] = {}
    for folder in library_dirs():
        if folder.is_dir():
            seen.setdefault(folder.resolve())
    return list(seen)


def _graphs(paths: list[Path]) -> tuple[list[tuple[str, Graph]], list[Finding]]:
    """Each graph file validated: a finding per file, and the valid graphs by file name."""
    from app.graphset import graph_files, load_graph

    graphs: list[tuple[str, Graph]] = []
    found: list[Finding] = []
    for path in paths:
        try:
            files = graph_files(path)
        except GraphFileError as exc:
            found.append(error(FindingCode.GRAPH, str(path), exc.reason, "pass an existing graph file or folder"))
            continue
        for file in files:
            found.append(_graph_finding(file))
            if not found[-1].is_error:
                graphs.append((file.stem, load_graph(file)))
    return graphs, found


def _graph_finding(path: Path) -> Finding:
    from app.graphset import validate_file

    file = _shown(path)
    fix = f"run `interlock validate {file}` and correct what it reports"
    try:
        outcome = validate_file(path).validation
    except GraphFileError as exc:
        return error(FindingCode.GRAPH, str(file), exc.reason, fix)
    if not outcome.valid:
        codes = "; ".join(f"`{issue.code}`: {issue.message}" for issue in outcome.errors)
        return error(FindingCode.GRAPH, str(file), f"invalid: {codes}", fix)
    return ok(
        FindingCode.GRAPH, str(file), f"valid, {len(outcome.warnings)} warning(s)" if outcome.warnings else "valid"
    )


def _shown(path: Path) -> Path:
    """A path as short as it can be said: relative to the current folder when it is inside it."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def github_findings(name: str) -> list[Finding]:
    """The App's view of ``name``, with the credentials the service uses (``GITHUB_APP_*``, ``GITHUB_API_URL``)."""
    from app.github.client import GitHubApp
    from app.github.doctor import check_repository
    from app.graphset import library_dirs
    from app.webhooks.handlers import Handlers
    from app.webhooks.router import Router
    from app.webhooks.settings import SettingsError, settings_from_env

    found: list[Finding] = []
    fix = "set it where `interlock doctor` and the service run"
    try:
        settings = settings_from_env()
    except SettingsError as exc:
        found = [error(FindingCode.APP_CREDENTIALS, "environment", problem, fix) for problem in exc.problems]
        try:  # the webhook secret and log level do not matter to API calls: check the rest anyway
            settings = settings_from_env({**os.environ, "GITHUB_WEBHOOK_SECRET": "-", "INTERLOCK_LOG_LEVEL": "info"})
        except SettingsError:
            return found
    app = GitHubApp(settings.app_identity())
    events = {event for event, _ in Handlers(app, []).register(Router()).handlers}
    return found + check_repository(app, name, library_dirs(), events)


def render(findings: list[Finding], title: str) -> str:
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


def register(cli: typer.Typer) -> None:
    @cli.command("doctor")
    def doctor(
        repo: Annotated[Path, typer.Option("--repo", help="The git repository (default: the current folder).")] = Path(
            "."
        ),
        config: Annotated[Path | None, typer.Option("--config", help="Local run configuration (YAML).")] = None,
        agent: Annotated[str | None, typer.Option("--agent", help="Check this agent as the default agent.")] = None,
        graph: Annotated[
            list[Path] | None, typer.Option("--graph", help="A graph file or folder to check too.")
        ] = None,
        github: Annotated[
            str | None, typer.Option("--github", metavar="OWNER/NAME", help="Check a repository on GitHub instead.")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    ) -> None:
        """Check what runs need, and say how to fix each problem: locally, or on GitHub with --github.

        Exit 0 when nothing is wrong, 1 when something is."""
        if github is None and not repo.exists() and REPOSITORY_NAME.match(str(repo)):
            typer.echo(f"(--repo {repo} is not a folder: checking the GitHub repository {repo})", err=True)
            github = str(repo)
        if github is not None and not REPOSITORY_NAME.match(github):
            raise InterlockError(f"--github takes OWNER/NAME, not {github!r}")
        if github is not None:
            findings, title = github_findings(github), f"interlock doctor: {github} on GitHub"
        else:
            findings = local_findings(repo, config, agent, graph or [])
            title = f"interlock doctor: {repo.resolve()}"
        if as_json:
            data = {"ok": not has_errors(findings), "findings": [finding.to_json() for finding in findings]}
            typer.echo(json.dumps(data, indent=2))
        else:
            typer.echo(render(findings, title))
        if has_errors(findings):
            raise typer.Exit(EXIT_INVALID)
