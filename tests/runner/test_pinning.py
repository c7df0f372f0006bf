"""SPEC J7 in the engine and the driver: the stop on a changed stored graph and the explicit upgrade; SPEC J6: the
chain every saved record carries and the event file each transition writes once (bounded, SPEC J5)."""

from __future__ import annotations

import json

import pytest

from app.engine import events as ev
from app.engine.errors import EventRejected
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus, ReasonCode, Status
from app.runner import chain
from app.runner.driver import RunDriver, same_event
from app.runner.verify import verify
from app.store.journal import encode_json, event_path, graph_path, record_path
from app.store.memory import MemoryStore
from tests.engine.driver import loop_graph
from tests.runner.test_driver import AT, GRAPH

START = ev.Start(key="start", at=AT, run_id="run-1", title="Greet")


def started() -> tuple[MemoryStore, RunDriver]:
    store = MemoryStore()
    driver = RunDriver(store)
    driver.start(START, GRAPH)
    return store, driver


def stop(key: str) -> ev.Event:
    return ev.StopRequested(key=key, at=AT)


def test_a_rewritten_stored_graph_stops_the_run_with_graph_mismatch_and_then_refuses_events() -> None:
    # SPEC J7: checked at every load, whatever graph the shell passes; a clear reason, the event's changes not applied
    store, driver = started()
    tampered = GRAPH.to_json()
    tampered["nodes"][0]["maxVisits"] = 7
    store.files[graph_path("run-1")] = encode_json(tampered)
    applied = driver.apply("run-1", same_event(stop("s1")))
    assert applied.run.status is Status.ESCALATED and applied.run.reason is not None
    assert applied.run.reason.code is ReasonCode.GRAPH_MISMATCH and "resume --upgrade" in applied.run.reason.message
    assert not applied.run.stop_requested  # the stop itself was not applied: the mismatch was
    with pytest.raises(EventRejected, match="its stored graph changed since it started"):
        driver.apply("run-1", same_event(stop("s2")))
    store.files[graph_path("run-1")] = encode_json(GRAPH.to_json())  # the genuine graph restored: the run goes on
    assert driver.apply("run-1", same_event(ev.Resume(key="r1", at=AT))).run.status is Status.RUNNING
    assert ReasonCode("graph_mismatch") is ReasonCode.GRAPH_MISMATCH  # the value the journal stores


def test_an_upgrade_moves_a_stopped_run_when_its_stage_exists_else_refuses_with_why() -> None:
    # SPEC J7: journaled as its own transition, with the new graph's hash
    store, driver = started()
    driver.apply("run-1", same_event(stop("s1")))
    run = driver.apply(
        "run-1", same_event(ev.MissionFinished(key="m1", at=AT, seq=1, status=MissionStatus.SKIPPED))
    ).run
    assert run.status is Status.INTERRUPTED
    renamed = parse_graph(json.loads(json.dumps(loop_graph()).replace('"work"', '"labour"')))
    with pytest.raises(EventRejected, match="has no stage 'work', where the run is"):
        driver.apply("run-1", same_event(ev.GraphUpgraded(key="u1", at=AT, graph_hash=renamed.content_hash())), renamed)
    newer = parse_graph(loop_graph(work={"maxVisits": 5}))
    upgrade = ev.GraphUpgraded(key="u2", at=AT, graph_hash=newer.content_hash())
    moved = driver.apply("run-1", same_event(upgrade), newer, {graph_path("run-1"): encode_json(newer.to_json())}).run
    assert moved.graph_hash == newer.content_hash() != GRAPH.content_hash() and moved.version == run.version + 1
    assert json.loads(store.files[event_path("run-1", moved.version)])["kind"] == "GraphUpgraded"


def test_every_record_carries_its_chain_and_each_transition_its_event_once() -> None:
    # SPEC J6: the previous version's hash, the event with the hash of the record it made; SPEC J5: one bounded file
    store, driver = started()
    first = store.versions[-1]
    assert first.chain is not None and first.chain.previous == ""
    second = driver.apply("run-1", same_event(stop("s1"))).run
    assert second.chain is not None and second.chain.previous == chain.record_hash(first)
    written = json.loads(store.files[event_path("run-1", 2)])
    assert written["record"] == chain.sha256(store.files[record_path("run-1")]) and written["kind"] == "StopRequested"
    assert len(store.files[event_path("run-1", 2)]) < 2000
    assert verify(store, "run-1").checked == 2
