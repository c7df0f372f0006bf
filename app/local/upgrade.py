"""``interlock resume --upgrade``: move a stopped run to another version of its graph (SPEC J7).

A run is pinned to the graph it started on (stored beside its record, checked against its content hash at every
load); editing or deleting a graph file changes no live run. Moving one is a person's explicit act, journaled as
its own transition (``GraphUpgraded``) before the resume: the new version is stored with the run and the one it
leaves is kept by its hash (``pinned_graph_path``), so ``interlock verify`` can still replay the versions before.
"""

from __future__ import annotations

from app.engine.events import GraphUpgraded
from app.engine.graph.model import Graph
from app.engine.record import Run
from app.local.launch import person
from app.local.missions import now
from app.local.shell import LocalShell
from app.runner.driver import same_event


def upgrade(shell: LocalShell, run_id: str, graph: Graph) -> Run:
    """The run on ``graph``; ``EventRejected`` saying why when its current stage is not in it (nothing changed)."""
    run = shell.store.load(run_id)
    files = shell.driver.upgrade_files(run, graph)
    event = GraphUpgraded(key=f"{run_id}/upgrade/{run.version}", at=now(), by=person(), graph_hash=graph.content_hash())
    with shell.lock(run_id):
        return shell.driver.apply(run_id, same_event(event), graph, files).run
