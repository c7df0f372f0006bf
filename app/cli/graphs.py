"""``interlock validate``, ``contract`` and ``draw``: what a graph file says, read with no run and no model.

``validate`` reports every error and warning of every file (exit 1 if any file has an error, 2 if one cannot be
read); with ``--cost`` it adds each valid graph's worst case and cheapest path (SPEC G7,
``app.engine.graph.cost_bound``). ``validate`` loads the graph engine alone (tests/test_cli_startup.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.cli.common import EXIT_INVALID, EXIT_USAGE, GraphArg, refuse
from app.engine.errors import GraphFileError, TeamInvalid

if TYPE_CHECKING:  # loaded by the commands when they run (app/cli/assemble.py)
    from app.engine.team import Team
    from app.graphset import FileReport


def register(cli: typer.Typer) -> None:
    cli.command("validate")(validate)
    cli.command("contract")(contract)
    cli.command("draw")(draw)


def validate(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="Graph files or folders (graphsets).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    team_file: Annotated[
        Path | None, typer.Option("--team", help="Team roster (YAML or JSON) for capability checks.")
    ] = None,
    cost: Annotated[bool, typer.Option("--cost", help="Also print each graph's worst case and cheapest path.")] = False,
) -> None:
    """Validate graphs: every error and warning of every file (exit 1 if any file has an error)."""
    team = _read_team(team_file) if team_file else None
    reports, unreadable = _validate_all(paths, team)
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


def _validate_all(paths: list[Path], team: Team | None) -> tuple[list[FileReport], list[str]]:
    """Every graph file of ``paths`` validated, and what could not be read: one unreadable file stops no other."""
    from app.graphset import graph_files, validate_file

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
    return reports, unreadable


def contract(graph_path: GraphArg, stage: Annotated[str, typer.Argument(help="Stage of the node.")]) -> None:
    """Print the verdict contract that the missions of STAGE receive (nothing when there is none)."""
    from app.engine.graph.contract import ContractKind, verdict_contract
    from app.graphset import load_graph

    graph = load_graph(graph_path)
    if not graph.has_stage(stage):
        refuse(f"graph {graph.name!r} has no stage {stage!r}; stages: {', '.join(node.stage for node in graph.nodes)}")
    terms = verdict_contract(graph, stage)
    if terms.kind is ContractKind.CHECK:
        typer.echo(f"(stage {stage!r} runs a check: its exit code is the verdict, no contract)", err=True)
    elif terms.text:
        typer.echo(terms.text)


def draw(
    graph_path: GraphArg,
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
            refuse(f"graph {graph.name!r} has no stage {stage!r}")
    typer.echo(draw_mermaid(graph, current, counts), nl=False)


def _parse_visits(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        stage, sep, number = item.partition("=")
        if not sep or not (number.strip().isascii() and number.strip().isdigit()) or len(number.strip()) > 9:
            refuse(f"--visits takes stage=n pairs separated by commas; cannot read {item!r}")
        counts[stage.strip()] = int(number)
    return counts


def _read_team(path: Path) -> Team:
    from app.graphset import load_team

    try:
        return load_team(path)
    except TeamInvalid as exc:
        refuse(str(exc))


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


def cost_json(report: FileReport) -> dict[str, Any]:
    """A file's report with its cost (``null`` for an invalid graph): ``validate --cost --json``."""
    from app.engine.graph.cost_bound import cost_bound

    graph = report.validation.graph
    return {**report.to_json(), "cost": None if graph is None else cost_bound(graph).to_json()}


def print_costs(reports: list[FileReport]) -> None:
    """Each valid graph's worst case and cheapest path: ``validate --cost``."""
    from app.engine.graph.cost_bound import cost_bound

    for report in reports:
        graph = report.validation.graph
        if graph is not None:
            typer.echo(f"{report.path} ({graph.name}):")
            typer.echo("\n".join(f"  {line}" for line in cost_bound(graph).lines()))
