"""``interlock simulate``: what a graph does and costs, with no model (SPEC G7).

It only reads arguments, calls the engine (``app.engine.graph.simulate``, ``app.engine.graph.cost_bound``) and prints
what it returns: a stage answers the verdicts given for it in turn, then PASS; a gate is approved or stops the walk.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.cli.common import GraphArg, refuse

if TYPE_CHECKING:  # the engine is loaded when a command runs, not when the command line starts (app/cli/assemble.py)
    from app.engine.graph.model import Graph
    from app.engine.graph.simulate import Simulation

EXIT_NOT_FINISHED = 1


class GateAnswer(StrEnum):
    APPROVE = "approve"
    STOP = "stop"


def register(cli: typer.Typer) -> None:
    cli.command("simulate")(simulate_command)


def simulate_command(
    graph_path: GraphArg,
    verdicts: Annotated[
        list[str] | None,
        typer.Option("--verdicts", help="A stage's verdicts in turn: stage=FAIL,FAIL,PASS (repeat per stage)."),
    ] = None,
    gates: Annotated[
        GateAnswer, typer.Option("--gates", help="approve every gate, or stop at the first one.")
    ] = GateAnswer.APPROVE,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    mermaid: Annotated[bool, typer.Option("--mermaid", help="Print the graph picture with visit counts.")] = False,
) -> None:
    """Walk GRAPH with no model: each stage answers its verdicts in turn, then PASS (exit 1 if the end is not
    reached)."""
    from app.engine.graph.mermaid import draw_mermaid
    from app.engine.graph.model import END
    from app.engine.graph.simulate import ScriptedVerdicts, finished, simulate
    from app.graphset import load_graph

    graph = load_graph(graph_path)
    script = parse_verdicts(graph, verdicts or [])
    result = simulate(graph, ScriptedVerdicts(graph, script, approve_gates=gates is GateAnswer.APPROVE))
    if as_json:
        typer.echo(json.dumps(simulation_json(graph, result), indent=2, ensure_ascii=False))
    elif mermaid:
        current = None if result.run.stage == END else result.run.stage
        typer.echo(draw_mermaid(graph, current, result.run.visits), nl=False)
    else:
        typer.echo("\n".join(simulation_lines(graph, result)))
    if not finished(result.run):
        raise typer.Exit(EXIT_NOT_FINISHED)


def parse_verdicts(graph: Graph, specs: list[str]) -> dict[str, list[str]]:
    """``stage=V1,V2`` items as each stage's verdicts, spelled as the graph spells its labels."""
    script: dict[str, list[str]] = {}
    for spec in specs:
        stage, sep, listed = spec.partition("=")
        stage = stage.strip()
        words = [word.strip() for word in listed.split(",")]
        if not sep or not stage or not all(words):
            refuse(f"--verdicts takes stage=VERDICT,VERDICT…; cannot read {spec!r}")
        if not graph.has_stage(stage):
            stages = ", ".join(node.stage for node in graph.nodes)
            refuse(f"graph {graph.name!r} has no stage {stage!r}; stages: {stages}")
        if stage in script:
            refuse(f"stage {stage!r} is given --verdicts twice: give its verdicts in one list")
        script[stage] = [_label(graph, stage, word) for word in words]
    return script


def _label(graph: Graph, stage: str, word: str) -> str:
    from app.engine.graph.simulate import verdicts_of

    allowed = verdicts_of(graph, stage)
    if allowed is None:  # a catch-all edge takes any word
        return word
    spelled = next((label for label in allowed if label.casefold() == word.casefold()), None)
    if spelled is None:
        refuse(f"stage {stage!r} cannot answer {word!r}: its verdicts are {', '.join(allowed)}")
    return spelled


def simulation_lines(graph: Graph, result: Simulation) -> list[str]:
    from app.engine.graph.model import PASS
    from app.engine.graph.simulate import outcome_line, verdicts_of

    run = result.run
    lines = [f"graph {graph.name!r} simulated with no model", "path:"]
    for number, hop in enumerate(result.hops, start=1):
        by = "" if hop.by == "engine" else f" (gate approved by {hop.by})"
        lines.append(f"  {number}. {hop.stage} (visit {hop.visit}) --{hop.verdict}--> {hop.to}{by}")
    if not result.hops:
        lines.append("  (no step taken)")
    visits = ", ".join(f"{node.stage} {run.visits.get(node.stage, 0)}/{node.max_visits}" for node in graph.nodes)
    ledger = run.ledger
    lines.append(f"visits: {visits}")
    lines.append(f"ledger: {_figures(ledger.attempts, ledger.calls, ledger.units)}")
    for category, line in sorted(ledger.by_category.items()):
        lines.append(f"  {category.value}: {_figures(line.attempts, line.calls, line.units)}")
    stopped = f" (stopped at the gate of {result.stopped_at_gate!r}: --gates stop)" if result.stopped_at_gate else ""
    if result.gave_up_after is not None:
        stopped = f" (the simulation gave up after {result.gave_up_after} events: the visit budgets allow more)"
    lines.append(f"final: {outcome_line(run)}{stopped}")
    where = run.reason.stage if run.reason is not None else None
    if where is not None and graph.has_stage(where) and PASS not in (verdicts_of(graph, where) or (PASS,)):
        example = (verdicts_of(graph, where) or (PASS,))[0]
        lines.append(f"note: stage {where!r} cannot answer PASS; give it verdicts, e.g. --verdicts {where}={example}")
    return lines


def _figures(missions: int, calls: int, units: float) -> str:
    from app.engine.graph.cost_bound import counted

    return f"{counted(missions, 'mission')}, {counted(calls, 'model call')}, {counted(units, 'unit')}"


def simulation_json(graph: Graph, result: Simulation) -> dict[str, Any]:
    from app.engine.graph.simulate import finished

    run = result.run
    ledger = run.ledger
    return {
        "graph": graph.name,
        "finished": finished(run),
        "status": run.status.value,
        "stage": run.stage,
        "reason": None if run.reason is None else {"code": run.reason.code.value, "message": run.reason.message},
        "stopped_at_gate": result.stopped_at_gate,
        "gave_up_after": result.gave_up_after,
        "path": [
            {"stage": hop.stage, "visit": hop.visit, "verdict": hop.verdict, "to": hop.to, "by": hop.by}
            for hop in result.hops
        ],
        "visits": {
            node.stage: {"visits": run.visits.get(node.stage, 0), "budget": node.max_visits} for node in graph.nodes
        },
        "ledger": {
            "missions": ledger.attempts,
            "calls": ledger.calls,
            "units": ledger.units,
            "by_category": {
                category.value: {"missions": line.attempts, "calls": line.calls, "units": line.units}
                for category, line in sorted(ledger.by_category.items())
            },
        },
    }
