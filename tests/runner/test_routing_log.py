"""Every routing line of a run stays in its journal, however much history the record trims (SPEC C3, J5).

The record keeps the newest ``HISTORY_CHARS`` of its compacted history so that a save stays bounded; from engine
rules 4 each transition names the lines it added and its events file keeps them (``app/runner/routing_log.py``).
"""

from __future__ import annotations

import json

import pytest

from app.engine import context, rules
from app.engine import events as ev
from app.engine.graph.validate import parse_graph
from app.engine.record import Run
from app.runner.driver import RunDriver
from app.runner.routing_log import render_routing, routing_log
from app.runner.verify import Divergence, verify
from app.store.journal import encode_json, event_path
from app.store.memory import MemoryStore
from tests.engine.driver import loop_graph
from tests.runner.test_long_verify import T0, finish  # the same mission answers, the same start time

GRAPH = parse_graph(loop_graph(work={"maxVisits": 1000}, review={"maxVisits": 1000}))


def long_run(store: MemoryStore, missions: int, run_id: str = "long") -> Run:
    """A work/review loop of ``missions`` missions: every mission ends with one routing line (its verdict)."""
    driver = RunDriver(store)
    run = driver.start(ev.Start(key="start", at=T0, run_id=run_id, title="long"), GRAPH).run
    for index in range(1, missions + 1):
        run = finish(driver, run, GRAPH, index)
    return run


def test_every_routing_line_is_kept_outside_the_trimmed_history() -> None:
    # SPEC C3: routing lines are always kept; SPEC J5: the record's history is still trimmed to its bound
    store = MemoryStore()
    run = long_run(store, 400)
    history = run.context.history
    assert history[0].startswith("[… cut by Interlock") and sum(map(len, history)) <= context.HISTORY_CHARS
    log = routing_log(store, run)
    lines = [row["line"] for row in log.rows]
    assert len(lines) == 400 and not log.unjournalled and not log.unreadable  # one verdict a mission, all kept
    assert lines[:2] == ["VERDICT: PASS → review", "VERDICT: FAIL → work"]
    assert "#1 work" not in "\n".join(history)  # the first mission's line left the record, not the journal
    assert [row["version"] for row in log.rows] == list(range(2, 402))  # in order, after the start


def test_each_events_file_keeps_only_its_own_lines() -> None:
    # SPEC J5: what a transition writes stays bounded however long the run: its own lines, once
    store = MemoryStore()
    run = long_run(store, 300)
    sizes = [len(store.read(event_path(run.id, version)) or b"") for version in (10, 150, run.version)]
    assert max(sizes) - min(sizes) < 200
    last = json.loads(store.read(event_path(run.id, run.version)) or b"{}")
    assert last["routing"] == run.routed == ["VERDICT: FAIL → work"] and last["rules"] == rules.RULES_VERSION


def test_an_edited_routing_line_fails_verify() -> None:
    # SPEC J6, C3: the record's hash vouches for its lines, so an events file that says others is found
    store = MemoryStore()
    run = long_run(store, 6)
    path = event_path(run.id, 4)
    data = json.loads(store.read(path) or b"{}")
    data["routing"] = ["VERDICT: PASS → __end__"]
    store.files[path] = encode_json(data)
    found = verify(store, run.id).found
    assert found is not None and found.kind is Divergence.EDITED_TRANSITION and found.version == 4
    assert "routing lines" in found.detail


def test_transitions_made_before_rules_4_are_counted_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC C3: a journal from before the lines were kept says which versions it cannot give, and verifies (J6)
    store = MemoryStore()
    monkeypatch.setattr(rules, "CURRENT", rules.Rules(3))
    run = long_run(store, 3, "old")
    monkeypatch.undo()
    run = finish(RunDriver(store), run, GRAPH, 4)
    log = routing_log(store, run)
    assert log.unjournalled == [1, 2, 3, 4] and [row["line"] for row in log.rows] == ["VERDICT: FAIL → work"]
    assert "4 transition(s) (versions 1-4) were made before Interlock kept routing lines" in render_routing(log)
    assert verify(store, run.id).found is None


def test_the_readme_says_where_every_routing_line_is_kept() -> None:
    # the tests above are the behaviour; these are the words
    from tests.helpers import doc

    text = " ".join(doc("local/journal.md").split())
    assert (
        "The routing lines leave the record, never the journal: each transition's events file keeps the lines it "
        'added (`"routing"`, since engine rules 4), so `interlock journey RUN --routing` prints every verdict'
    ) in text
    assert "`verify` names an events file whose lines are not the ones the record's hash vouches for" in text
