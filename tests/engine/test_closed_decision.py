"""A pull request closed or merged while a decision is open closes the decision, with who and when (issue 28,
part 3; SPEC E3): the journey and the issue say how the wait ended instead of an open decision on an ended run."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine import rules
from app.engine.effects import MessageKind, PostMessage
from app.engine.record import Choice, MissionStatus, Status
from app.engine.rules import Rules
from tests.engine.driver import Driver, loop_graph


def escalated() -> Driver:
    d = Driver(loop_graph())
    d.finish("boom", status=MissionStatus.CRASHED)
    assert d.run.status is Status.FAILED and d.run.decisions[-1].choice is None
    return d


@pytest.mark.parametrize(
    ("kind", "how", "status"),
    [
        (ev.Closed, "pull request closed without merge", Status.CANCELLED),
        (ev.Merged, "pull request merged", Status.DONE),
    ],
)
def test_a_pull_request_closed_while_a_decision_is_open_closes_it(
    kind: type[ev.Event], how: str, status: Status
) -> None:
    d = escalated()
    effects = d.apply(kind, by="bob")
    decision = d.run.decisions[-1]
    assert (d.run.status, decision.choice, decision.taken, decision.by) == (status, Choice.CLOSED, how, "bob")
    assert decision.decided_at == d.run.updated_at
    said = [e.text for e in effects if isinstance(e, PostMessage) and e.kind is MessageKind.DECIDED]
    assert said and said[0].startswith(f"Decided: {how} by bob at ")


def test_a_run_closed_under_rules_3_keeps_its_decision_open(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC J6: a journal of rules 3 replays to the record it recorded
    monkeypatch.setattr(rules, "CURRENT", Rules(3))
    d = escalated()
    d.apply(ev.Closed, by="bob")
    assert d.run.status is Status.CANCELLED and d.run.decisions[-1].choice is None
