"""A journal whose decisions were read by the rule before issue 17 (SPEC V8, J6): `interlock verify` replays
each event with the engine rules it was made under (app/engine/rules.py), so it reads such a decision by the old
rule even though today's engine reads a decision's answer by the new one.

Seen with the real code of b65f9bf: `interlock run` of graphs/operations/triage.json with a decision answering
`I think it is a BUG.`, `BUG.` or two verdict lines (`BUG`, then `FEATURE`), then `interlock verify` of main
after issue 17: "engine drift at version 3 (runs/<id>/events/000003.json): replaying DecisionReturned …".
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from app.engine import events as ev
from app.engine import rules, step
from app.engine.errors import StaleEvent
from app.engine.flow import escalate, settle, spend
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionKind, MissionStatus, ReasonCode
from app.engine.routing import route_result
from app.engine.transition import Transition
from app.engine.verdict import parse_verdict
from app.runner.driver import RunDriver, same_event
from app.runner.verify import verify
from app.store.journal import encode_json, mission_path
from app.store.memory import MemoryStore
from tests.helpers import GRAPHS, doc

T0 = datetime(2026, 12, 1, tzinfo=UTC)
TRIAGE = parse_graph(json.loads((GRAPHS / "operations" / "triage.json").read_text(encoding="utf-8")))


def decided_before_issue_17(t: Transition, event: ev.DecisionReturned) -> None:
    """on_decision as b65f9bf had it: the verdict line's label or the whole answer, kept (cut) when no label."""
    waiting = t.run.waiting
    if waiting is None or waiting.kind is not MissionKind.DECIDE or waiting.seq != event.seq:
        raise StaleEvent(t.run.id, t.run.status.value, "DecisionReturned", f"no decision #{event.seq} is awaited")
    labels = t.graph.labels(waiting.stage)
    said = parse_verdict(event.answer) or event.answer.strip()
    chosen = next((label for label in labels if label.casefold() == said.casefold()), None)
    settle(t, event.seq, status=MissionStatus.DONE, usage=event.usage, verdict=chosen or said[:80])
    spend(t, MissionKind.DECIDE, event.usage)
    if chosen is None:
        t.run.waiting = None
        labels_text = ", ".join(labels)
        escalate(
            t,
            ReasonCode.INVALID_SELECTION,
            f"the decision at {waiting.stage!r} answered {said[:80]!r}, outside {labels_text}",
        )
        return
    route_result(t, waiting, chosen, event.answer)


@pytest.mark.parametrize("answer", ["I think it is a BUG.", "BUG.", "VERDICT: BUG\nVERDICT: FEATURE"])
def test_a_decision_recorded_before_issue_17_still_verifies(monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    # SPEC J6: a journal nobody edited verifies, whichever Interlock version wrote it
    assert recorded_then_verified(monkeypatch, answer) is None


@pytest.mark.parametrize("answer", ["BUG", "VERDICT: feature"])
def test_a_decision_both_rules_read_alike_verifies(monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    # SPEC J6: where the rules agree (a label alone, one verdict line) the old journal replays to the same records
    assert recorded_then_verified(monkeypatch, answer) is None


def recorded_then_verified(monkeypatch: pytest.MonkeyPatch, answer: str) -> str | None:
    """A triage run whose decision answered ``answer``, journaled by the rule before issue 17, then verified."""
    store = MemoryStore()
    driver = RunDriver(store)
    monkeypatch.setitem(step.HANDLERS, ev.DecisionReturned, decided_before_issue_17)
    monkeypatch.setattr(
        rules, "CURRENT", rules.Rules(rules.UNRECORDED[0], recorded=False)
    )  # Interlock before issue 27 recorded none
    run = driver.start(ev.Start(key="start", at=T0, run_id="old", title="It crashes"), TRIAGE).run
    waiting = run.waiting
    assert waiting is not None
    worker = "The parser crashes on empty input."
    finished = ev.MissionFinished(key="m1", at=T0, seq=waiting.seq, status=MissionStatus.DONE, answer=worker)
    files = {mission_path(run.id, waiting.seq, waiting.stage): encode_json({"answer": worker})}
    run = driver.apply(run.id, same_event(finished), TRIAGE, files).run
    decision = run.waiting
    assert decision is not None and decision.kind is MissionKind.DECIDE
    returned = ev.DecisionReturned(key="d2", at=T0, seq=decision.seq, answer=answer)
    run = driver.apply(run.id, same_event(returned), TRIAGE, {}).run
    monkeypatch.undo()
    checked = verify(store, run.id)
    return None if checked.found is None else checked.summary()


def test_the_readme_says_which_older_runs_verify_under_their_rules() -> None:
    # the tests here and in test_long_verify.py are the behaviour; these are the words
    text = " ".join(doc("local/journal.md").split())
    assert (
        "so a run recorded before a change of the rules still verifies untouched — a run of more than about 160 "
        "missions recorded before the context history was trimmed (rules 1), or a decision answered in prose, as "
        "`BUG.` or with two verdict lines before decisions took a label or none (rules 1 and 2)."
    ) in text
