"""``interlock doctor``: what runs need, checked on demand, each problem with its fix (exit 1 when anything is wrong).

The same checks ``run`` goes through before it starts (``app/cli/runs.py``) and a continuing command before it
drives a run on (``app/cli/continuing.py``), where a problem costs nothing; here, for the graphs of ``--graph``
and the library's too, or for a repository on GitHub through the App's credentials (``--github``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import EXIT_INVALID, REPOSITORY_NAME, ConfigOpt, Repo, missing_agent, render
from app.engine.errors import GraphFileError, InterlockError
from app.engine.findings import Finding, FindingCode, error, has_errors, ok, warning

if TYPE_CHECKING:  # loaded by the checks when they run, not when the command line starts (app/cli/assemble.py)
    from app.engine.graph.model import Graph
    from app.local.config import LocalConfig


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
        return [finding for _, graph in given for finding in missing_agent(settings, graph)]
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


def register(cli: typer.Typer) -> None:
    cli.command("doctor")(doctor)


def doctor(
    repo: Repo = Path("."),
    config: ConfigOpt = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Check this agent as the default agent.")] = None,
    graph: Annotated[list[Path] | None, typer.Option("--graph", help="A graph file or folder to check too.")] = None,
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
