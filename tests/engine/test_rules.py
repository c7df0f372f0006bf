"""The engine's rules versions (app/engine/rules.py, SPEC J6): each transition is made under one and says which;
the older rules stay reachable so that ``verify`` can replay a journal made under them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.engine import events as ev
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionKind, MissionStatus, MissionSummary, Run, Status
from app.engine.rules import NOT_RECORDED, RULES_VERSION, Rules, UnknownRules, replaying
from app.engine.step import step
from tests.engine.driver import loop_graph
from tests.helpers import GRAPHS

T0 = datetime(2026, 12, 1, tzinfo=UTC)
TRIAGE = parse_graph(json.loads((GRAPHS / "operations" / "triage.json").read_text(encoding="utf-8")))


def decided(answer: str, rules: Rules) -> Run:
    run, _ = step(None, ev.Start(key="start", at=T0, run_id="r", title="It crashes"), TRIAGE, rules)
    assert run.waiting is not None
    worker = ev.MissionFinished(key="m1", at=T0, seq=run.waiting.seq, status=MissionStatus.DONE, answer="crash")
    run, _ = step(run, worker, TRIAGE, rules)
    assert run.waiting is not None
    run, _ = step(run, ev.DecisionReturned(key="d2", at=T0, seq=run.waiting.seq, answer=answer), TRIAGE, rules)
    return run


def decision(run: Run) -> MissionSummary:
    return next(m for m in run.missions if m.kind is MissionKind.DECIDE)


def test_each_transition_says_the_rules_it_was_made_under() -> None:
    # SPEC J6: the record says which rules built it; a model of Interlock before issue 27 says none
    assert decided("BUG", Rules()).rules == RULES_VERSION
    assert decided("BUG", Rules(2)).rules == 2
    assert decided("BUG", Rules(1, recorded=False)).rules == NOT_RECORDED


def test_a_decision_under_rules_before_issue_17_is_read_by_the_old_rule() -> None:
    # SPEC V8 (since rules 3): `BUG.` is the label BUG; the rule before kept `BUG.` as said, outside the list
    assert decision(decided("BUG.", Rules())).verdict == "BUG"
    old = decided("BUG.", Rules(2))
    assert old.status is Status.ESCALATED and decision(old).verdict == "BUG."
    assert (
        old.reason is not None
        and old.reason.message == "the decision at 'triage' answered 'BUG.', outside BUG, FEATURE, QUESTION, DUPLICATE"
    )


def test_the_history_is_trimmed_only_under_rules_since_issue_16() -> None:
    # SPEC J5 (since rules 2): the history keeps its newest 8,000 characters; rules 1 kept every compacted result
    graph = parse_graph(loop_graph(work={"maxVisits": 1000}, review={"maxVisits": 1000}))
    histories = {}
    for rules in (Rules(1), Rules(2)):
        run, _ = step(None, ev.Start(key="start", at=T0, run_id="r", title="long"), graph, rules)
        for index in range(1, 241):
            assert run.waiting is not None
            answer = "done" + ("\nVERDICT: FAIL" if run.waiting.stage == "review" else "")
            at = T0 + timedelta(seconds=index)
            event = ev.MissionFinished(
                key=f"m{index}", at=at, seq=run.waiting.seq, status=MissionStatus.DONE, answer=answer
            )
            run, _ = step(run, event, graph, rules)
        histories[rules.version] = run.context.history
    assert sum(map(len, histories[1])) > 8000 and not histories[1][0].startswith("[… cut by Interlock")
    assert sum(map(len, histories[2])) <= 8000 and histories[2][0].startswith("[… cut by Interlock")


def test_replay_rules_for_what_a_transition_recorded() -> None:
    # SPEC J6: its own rules; none recorded: those of Interlock before issue 27; a newer Interlock's: refused
    assert replaying(2) == (Rules(2),)
    assert {rules.version for rules in replaying(NOT_RECORDED)} == {1, 2, 3}
    assert all(not rules.recorded for rules in replaying(NOT_RECORDED))
    with pytest.raises(UnknownRules, match=f"engine rules {RULES_VERSION + 1}, which this Interlock does not know"):
        replaying(RULES_VERSION + 1)


def test_rules_that_were_always_recorded_cannot_be_modelled_as_unrecorded() -> None:
    # SPEC J6: only Interlock before issue 27 recorded no rules, and it knew rules 1 to 3 (a test modelling it
    # with rules 4 would write routing lines no such Interlock wrote, and replay to engine drift)
    with pytest.raises(ValueError, match="rules 4 were always recorded"):
        Rules(4, recorded=False)
    assert Rules(3, recorded=False).stamp == NOT_RECORDED
