"""A long run's journal still verifies once its context history is trimmed (SPEC J5, J6)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.engine import context, rules
from app.engine import events as ev
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus, Run
from app.runner.driver import RunDriver, same_event
from app.runner.verify import verify
from app.store.journal import encode_json, mission_path, record_path
from app.store.memory import MemoryStore
from tests.engine.driver import loop_graph

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_run_long_enough_to_trim_its_history_verifies_every_transition() -> None:
    # SPEC J6: the trimming is the engine's, so a replay trims where the run did; SPEC J5: the marker is there
    graph = parse_graph(loop_graph(work={"maxVisits": 1000}, review={"maxVisits": 1000}))
    store = MemoryStore()
    driver = RunDriver(store)
    run = driver.start(ev.Start(key="start", at=T0, run_id="long", title="long"), graph).run
    for index in range(1, 241):
        run = finish(driver, run, graph, index)
    assert run.context.history[0].startswith("[… cut by Interlock: the compacted results up to mission #")
    checked = verify(store, run.id)
    assert checked.found is None and checked.checked == run.version and checked.first == 1


def test_a_long_run_recorded_before_the_history_was_trimmed_still_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC J6: a journal nobody edited verifies, whichever Interlock version wrote it; the code before issue 16
    # kept every compacted result (modelled here by a bound no history reaches) and, like all code before issue
    # 27, recorded no engine rules; a run continues after upgrading, and verify replays each part by its rules
    graph = parse_graph(loop_graph(work={"maxVisits": 1000}, review={"maxVisits": 1000}))
    store = MemoryStore()
    driver = RunDriver(store)
    monkeypatch.setattr(context, "HISTORY_CHARS", 10**9)  # written by the code before the trimming
    monkeypatch.setattr(rules, "CURRENT", rules.Rules(rules.UNRECORDED[0], recorded=False))  # which recorded no rules
    run = driver.start(ev.Start(key="start", at=T0, run_id="old", title="old"), graph).run
    for index in range(1, 241):
        run = finish(driver, run, graph, index)
    assert sum(map(len, run.context.history)) > 8000 and b'"rules"' not in store.read(record_path(run.id))
    monkeypatch.undo()  # the new code continues the run and verifies it
    run = finish(driver, run, graph, 241)
    assert run.rules == rules.RULES_VERSION and run.context.history[0].startswith("[… cut by Interlock")
    checked = verify(store, run.id)
    assert checked.found is None, checked.summary()
    assert checked.checked == run.version


def finish(driver: RunDriver, run: Run, graph: Graph, index: int) -> Run:
    waiting = run.waiting
    assert waiting is not None
    answer = "done" + ("\nVERDICT: FAIL" if waiting.stage == "review" else "")
    event = ev.MissionFinished(
        key=f"m{index}", at=T0 + timedelta(seconds=index), seq=waiting.seq, status=MissionStatus.DONE, answer=answer
    )
    files = {mission_path(run.id, waiting.seq, waiting.stage): encode_json({"answer": answer})}
    return driver.apply(run.id, same_event(event), graph, files).run
