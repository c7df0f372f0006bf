"""A run pinned to its graph (SPEC J7): the stop when the stored graph changed, and a person's explicit upgrade.

Why here: both are people's business rather than routing; ``step`` applies them with the graph the shell passes:
for a mismatch the graph as found (only its decision file reads it), for an upgrade the new version.
"""

from __future__ import annotations

from app.engine.events import GraphMismatched, GraphUpgraded
from app.engine.flow import escalate
from app.engine.graph.model import Graph
from app.engine.kinds import MissionKind
from app.engine.people import reject
from app.engine.raises import HeldCall
from app.engine.record import RESUMABLE, ReasonCode, Status
from app.engine.transition import Transition

UPGRADE_HINT = "restore the graph stored with the run, or move the run to this version with `resume --upgrade`"


def on_graph_mismatch(t: Transition, event: GraphMismatched) -> None:
    """Stop with ``graph_mismatch``; a run already stopped for it refuses every event until it is settled."""
    reason = t.run.reason
    if t.run.status is Status.ESCALATED and reason is not None and reason.code is ReasonCode.GRAPH_MISMATCH:
        raise reject(t, event, f"its stored graph changed since it started: {UPGRADE_HINT}")
    escalate(
        t,
        ReasonCode.GRAPH_MISMATCH,
        f"the graph stored with the run has content hash {event.found[:12]}, not {t.run.graph_hash[:12]} as when "
        f"the run started on it: {UPGRADE_HINT}",
    )


def on_graph_upgraded(t: Transition, event: GraphUpgraded) -> None:
    """Move a stopped run to the graph's current version when its current stage is still there (SPEC J7)."""
    if t.run.status not in RESUMABLE:
        raise reject(t, event, "only a stopped, failed, escalated or waiting run can move to another graph")
    if t.graph.content_hash() != event.graph_hash:
        raise reject(t, event, "the graph given is not the version the upgrade names")
    if event.graph_hash == t.run.graph_hash:
        raise reject(t, event, f"the run is already on this version of graph {t.graph.name!r}")
    if not t.graph.has_stage(t.run.stage):
        raise reject(
            t, event, f"the current version of graph {t.graph.name!r} has no stage {t.run.stage!r}, where the run is"
        )
    t.run.graph = t.graph.name
    t.run.graph_hash = event.graph_hash
    t.run.visits = {stage: count for stage, count in t.run.visits.items() if t.graph.has_stage(stage)}
    if t.run.held is not None and not held_call_fits(t.graph, t.run.held):
        t.run.held = None  # a call of the version left (SPEC P5): a resume re-enters the stage on this one


def held_call_fits(graph: Graph, held: HeldCall) -> bool:
    """Whether the call a budget held is still the call ``graph``'s node at its stage makes: a decision at a node
    that decides, a check at a check, a worker's call at a node with a worker; the advisor anywhere."""
    if not graph.has_stage(held.stage):
        return False
    node = graph.node(held.stage)
    if held.kind is MissionKind.DECIDE:
        return node.decides
    if held.kind is MissionKind.ADVISOR:
        return True
    return (held.kind is MissionKind.CHECK) == (node.check is not None)
