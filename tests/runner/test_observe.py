"""The driver hands every saved transition, and only those, to whoever watches (SPEC W6); a watcher that fails
never fails the transition, which the journal has already saved."""

from __future__ import annotations

import logging

import pytest

from app.engine import events as ev
from app.engine.record import MissionStatus
from app.runner import observe
from app.runner.driver import RunDriver, same_event
from app.runner.saved import Saved
from app.store.memory import MemoryStore
from tests.runner.test_driver import AT, GRAPH, finished, started


class Heard:
    def __init__(self, fail: bool = False) -> None:
        self.saved: list[Saved] = []
        self.fail = fail

    def transition(self, saved: Saved) -> None:
        self.saved.append(saved)
        if self.fail:
            raise RuntimeError("a broken watcher")


def test_each_saved_transition_is_heard_once_and_a_repeat_is_not(caplog: pytest.LogCaptureFixture) -> None:
    store, heard, broken = MemoryStore(), Heard(), Heard(fail=True)
    observe.watch(heard)
    observe.watch(broken)
    driver = RunDriver(store)
    with caplog.at_level(logging.ERROR, logger="interlock.observe"):
        run = started(driver)
        done = driver.apply(run.id, same_event(finished(1)), GRAPH)
        again = driver.apply(run.id, same_event(finished(1)), GRAPH)  # the same key: applied before, not saved
    assert done.new and not again.new and store.load(run.id).version == done.run.version  # saved despite `broken`
    assert [s.kind for s in heard.saved] == ["Start", "MissionFinished"] and len(broken.saved) == 2
    start, mission = heard.saved
    assert start.before is None and start.after == run and start.started <= start.ended
    assert mission.before == run and mission.after == done.run and mission.verdict() == "PASS"
    assert mission.category() is not None and mission.category().value == "deliver"
    assert mission.repository == "" and "a broken watcher" in caplog.text


def test_a_watcher_no_one_holds_is_forgotten() -> None:
    heard = Heard()
    observe.watch(heard)
    del heard  # the service that made it is gone
    driver = RunDriver(MemoryStore())
    run = started(driver)
    driver.apply(run.id, same_event(ev.MissionFinished(key="k", at=AT, seq=1, status=MissionStatus.FAILED)), GRAPH)
    assert all(not isinstance(watcher, Heard) for watcher in observe._watchers)
