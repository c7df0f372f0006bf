"""The run driver under every shell: start, compare-and-swap apply with one retry policy, the stored graph,
the files saved with a transition — against the in-memory journal and the git journal alike (SPEC J1, J2)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.engine import events as ev
from app.engine.effects import Escalate
from app.engine.errors import InterlockError
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus, Run
from app.runner import driver as driver_module
from app.runner.driver import MAX_TRIES, OrderTerms, RunDriver, same_event
from app.store.gitstore import GitStore
from app.store.journal import RunStore, decision_path, graph_path, order_path
from app.store.memory import MemoryStore
from tests.engine.driver import loop_graph
from tests.local.harness import make_repo

AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
GRAPH = parse_graph(loop_graph())


@pytest.fixture(params=["memory", "git"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        make_repo(tmp_path)
        yield GitStore(tmp_path)


@pytest.fixture(autouse=True)
def no_cached_graphs() -> Iterator[None]:
    driver_module.GRAPH_CACHE.clear()  # each test reads the graph its store holds
    yield
    driver_module.GRAPH_CACHE.clear()


def started(driver: RunDriver, graph: Graph = GRAPH) -> Run:
    return driver.start(ev.Start(key="start", at=AT, run_id="run-1", title="Greet"), graph).run


def finished(seq: int, status: MissionStatus = MissionStatus.DONE, key: str = "done") -> ev.Event:
    return ev.MissionFinished(key=key, at=AT, seq=seq, status=status, answer="done\nVERDICT: PASS")


def test_a_start_stores_the_record_with_its_graph_and_the_graph_is_read_back(store: RunStore) -> None:
    # SPEC J1: the run goes on on the graph it started on, stored beside its first record
    driver = RunDriver(store)
    run = started(driver)
    assert store.load("run-1") == run
    stored = store.read(graph_path("run-1"))
    assert stored is not None and json.loads(stored) == GRAPH.to_json()
    assert driver.graph_of(run).to_json() == GRAPH.to_json()


def test_a_run_without_its_stored_graph_is_a_clear_error(store: RunStore) -> None:
    run = started(RunDriver(store))
    with pytest.raises(InterlockError, match="has no stored graph"):
        RunDriver(MemoryStore()).graph_of(run)


def conflicting(store: RunStore, times: int, made: list[str]) -> Callable[[Run], ev.Event]:
    """An event whose first ``times`` makings each see another writer save between the read and the save."""

    def make(current: Run) -> ev.Event:
        made.append(f"{current.id}@{current.version}")
        if len(made) <= times:
            store.save(current.but(version=current.version + 1), current.version)
        return finished(1)

    return make


def test_a_conflict_is_retried_on_the_new_version_and_applied_once(store: RunStore) -> None:
    # SPEC J2: of two writers exactly one wins; the loser re-reads and re-applies its event
    driver = RunDriver(store)
    started(driver)
    made: list[str] = []
    applied = driver.apply("run-1", conflicting(store, 2, made))
    assert applied.new and made == ["run-1@1", "run-1@2", "run-1@3"]
    assert store.load("run-1").version == 4 and "done" in store.load("run-1").applied


def test_the_driver_gives_up_after_the_one_number_of_tries(store: RunStore) -> None:
    # SPEC J2: a writer that loses every time gives up, saying so, after MAX_TRIES tries — in every shell
    driver = RunDriver(store)
    started(driver)
    made: list[str] = []
    with pytest.raises(InterlockError, match=f"gave up after {MAX_TRIES} conflicting writes"):
        driver.apply("run-1", conflicting(store, 1000, made))
    assert len(made) == MAX_TRIES == 20


def test_a_retry_re_applies_the_same_event_and_a_duplicate_saves_nothing(store: RunStore) -> None:
    # SPEC J2: the same key twice changes nothing; no effect is emitted again
    driver = RunDriver(store)
    started(driver)
    first = driver.apply("run-1", same_event(finished(1)))
    again = driver.apply("run-1", same_event(finished(1)))
    assert first.new and first.effects and not again.new and again.effects == []
    assert again.run == first.run and store.load("run-1").version == first.run.version


def test_an_escalation_saves_its_decision_file_with_the_transition(store: RunStore) -> None:
    # SPEC E2: the decision file is written with the transition that escalates
    driver = RunDriver(store)
    started(driver)
    applied = driver.apply("run-1", same_event(finished(1, MissionStatus.CRASHED)))
    assert applied.run.status.value == "failed"
    saved = store.read(decision_path("run-1"))
    decisions = [effect.decision for effect in applied.effects if isinstance(effect, Escalate)]
    assert saved is not None and [saved.decode()] == decisions


def test_orders_are_saved_only_for_a_shell_that_dispatches_jobs(store: RunStore) -> None:
    # SPEC GH3: a job runs exactly the prompt the engine assembled, stored with the transition that dispatched it
    asked: list[int] = []

    def terms() -> OrderTerms:
        asked.append(1)
        return OrderTerms(advisor="python advisor.py")

    started(RunDriver(store, terms))
    order = store.read(order_path("run-1", 1, "work"))
    assert order is not None and json.loads(order)["stage"] == "work" and asked == [1]
    applied = RunDriver(store).apply("run-1", same_event(finished(1)))  # no orders: a local shell
    assert applied.new and store.read(order_path("run-1", 2, "review")) is None


def test_the_order_terms_are_asked_only_when_a_job_is_dispatched(store: RunStore) -> None:
    asked: list[int] = []

    def terms() -> OrderTerms:
        asked.append(1)
        return OrderTerms()

    driver = RunDriver(store, terms)
    started(RunDriver(store))
    driver.apply("run-1", same_event(finished(1, MissionStatus.CRASHED)))  # escalates: nothing dispatched
    assert asked == []
