"""Review of issue 12: the stored graph one journal holds must not become the graph of another journal's runs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from app.engine import events as ev
from app.runner import driver as driver_module
from app.runner.driver import RunDriver
from app.store.journal import encode_json, graph_path
from app.store.memory import MemoryStore
from tests.runner.test_driver import AT, GRAPH


@pytest.fixture(autouse=True)
def no_cached_graphs() -> Iterator[None]:
    driver_module.GRAPH_CACHE.clear()
    yield
    driver_module.GRAPH_CACHE.clear()


def test_a_rewritten_stored_graph_is_never_cached_for_other_repositories_runs() -> None:
    # repository A (anyone with push access to its state branch) rewrites its run's stored graph, keeping the
    # record's graph_hash; repository B's run on the genuine graph must go on on the genuine graph
    start = ev.Start(key="start", at=AT, run_id="run-1", title="Greet")
    mine, theirs = MemoryStore(), MemoryStore()
    run_a = RunDriver(mine).start(start, GRAPH).run
    run_b = RunDriver(theirs).start(start, GRAPH).run
    tampered = json.loads(json.dumps(GRAPH.to_json()))
    tampered["name"] = "tampered"
    mine.files[graph_path(run_a.id)] = encode_json(tampered)
    RunDriver(mine).graph_of(run_a)  # repository A's delivery reads its rewritten graph first
    assert RunDriver(theirs).graph_of(run_b).to_json() == GRAPH.to_json()
    assert driver_module.GRAPH_CACHE.get(run_b.graph_hash) is not None  # the genuine graph is still cached
