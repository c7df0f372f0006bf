"""Budgets that pause instead of fail: a raise makes the refused call, nothing paid twice (SPEC P5)."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import events as ev
from app.engine.decision import RAISE, render_decision
from app.engine.effects import AskDecision, DispatchMission, Escalate, MessageKind, PostMessage
from app.engine.errors import EventRejected
from app.engine.graph.validate import parse_graph
from app.engine.raises import LIMITS, RAISE_WINDOW, RaiseInvalid, parse_raise
from app.engine.record import Category, Choice, MissionKind, ReasonCode, Run, Status, Usage
from app.local.reports import money_report
from tests.engine.driver import Driver, loop_graph
from tests.helpers import doc, edge, graph, node


def out_of_calls(max_calls: int = 3) -> Driver:
    """work → review FAIL → work → (review refused: maxCalls)."""
    d = Driver(loop_graph(policy={"maxCalls": max_calls}))
    while d.run.status is Status.RUNNING:
        d.finish("VERDICT: FAIL" if d.run.stage == "review" else "done")
    return d


def charged_calls(run: Run) -> int:
    return sum(line.calls for line in run.ledger.by_category.values())


def test_a_budget_stop_is_escalated_with_the_figures_and_the_raise_as_an_option() -> None:
    # SPEC P5, P2: used, limit and what the next call needs; the command that raises it is an option
    d = out_of_calls()
    reason = d.run.reason
    assert d.run.status is Status.ESCALATED and reason is not None and reason.code is ReasonCode.CALL_BUDGET_EXHAUSTED
    assert "3 of 3 calls used; the next call needs 1 more" in reason.message
    assert "the deliver call at 'review' was not made" in reason.message
    decision = d.of(Escalate)[0].decision
    assert "`interlock budget run-1 calls=+3`" in decision and "`/interlock budget calls=+3`" in decision
    assert "| raise budget **(recommended)** |" in decision
    assert d.run.decisions[-1].options.count("raise budget") == 1


def test_a_raise_makes_the_refused_call_and_the_ledger_keeps_who_raised_it() -> None:
    # SPEC P5: continues where it stopped, same stage, no visit spent, nothing paid twice
    d = out_of_calls()
    visits, missions, accepted = dict(d.run.visits), d.run.mission_count, d.run.ledger.accepted
    d.apply(ev.BudgetRaised, by="alice", amounts={"calls": 2})
    sent = d.dispatched()
    assert (sent.stage, sent.kind, sent.seq) == ("review", MissionKind.DELIVER, missions + 1)
    assert d.run.status is Status.RUNNING and d.run.reason is None and d.run.held is None
    assert d.run.visits == visits and d.run.ledger.accepted == accepted
    assert d.run.policy.max_calls == 5
    raised = d.run.ledger.raises[-1]
    assert (raised.by, raised.stage, raised.amounts, raised.text()) == ("alice", "review", {"calls": 2}, "calls=+2")
    assert raised.at == d.run.updated_at and d.run.ledger.raise_count == 1
    assert d.run.ledger.calls == charged_calls(d.run) == d.run.mission_count == 4
    decided = d.run.decisions[-1]
    assert (decided.choice, decided.taken, decided.by) == (Choice.BUDGET, "budget calls=+2", "alice")
    assert any(isinstance(e, PostMessage) and e.kind is MessageKind.DECIDED for e in d.effects)
    d.finish("VERDICT: PASS")
    assert d.run.status is Status.AWAITING_MERGE


def test_a_raise_still_too_small_stops_again_with_the_new_figures() -> None:
    # SPEC P5
    d = out_of_calls()
    d.apply(ev.BudgetRaised, by="alice", amounts={"calls": 1})
    d.finish("VERDICT: FAIL")  # review ran; work is next and refused
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert "4 of 4 calls used; the next call needs 1 more" in d.run.reason.message
    assert d.run.held is not None and d.run.held.stage == "work"
    d.apply(ev.BudgetRaised, by="bob", amounts={"calls": 10})
    assert d.dispatched().stage == "work" and [r.by for r in d.run.ledger.raises] == ["alice", "bob"]


def test_a_raise_after_an_accepted_mission_asks_the_decision_and_reruns_nothing() -> None:
    # SPEC P5, V8: the mission at a decide node was accepted; only the refused decision call is made
    d = Driver(
        graph(
            [node("triage", decide=True), node("fix")],
            [edge("triage", "BUG", "fix"), edge("fix", "PASS", "__end__")],
            entry="triage",
            policy={"maxCalls": 1},
        )
    )
    d.finish("The stack trace shows a crash in parse().")
    assert d.run.reason is not None and d.run.reason.code is ReasonCode.CALL_BUDGET_EXHAUSTED
    d.apply(ev.BudgetRaised, by="alice", amounts={"calls": 2})
    assert not d.of(DispatchMission)
    ask = d.of(AskDecision)[0]
    assert "crash in parse()" in ask.prompt and d.run.ledger.accepted == 1
    d.apply(ev.DecisionReturned, seq=ask.seq, answer="BUG")
    assert d.dispatched().stage == "fix" and d.run.ledger.calls == charged_calls(d.run) == 3


def test_usd_and_unit_limits_say_what_the_next_call_costs_and_can_be_raised() -> None:
    # SPEC P5, P1
    d = Driver(loop_graph(policy={"maxCostUsd": 1.0}))
    d.finish("done", usage=Usage(cost_usd=0.6))
    d.finish("VERDICT: FAIL", usage=Usage(cost_usd=0.6))
    message = d.run.reason.message  # type: ignore[union-attr]
    assert "$1.20 of $1.00 spent" in message and "about $0.60, the average of the calls so far" in message
    assert "`/interlock budget usd=+1`" in d.of(Escalate)[0].decision
    d.apply(ev.BudgetRaised, by="alice", amounts={"usd": 2})
    assert d.dispatched().stage == "work" and d.run.policy.max_cost_usd == 3.0
    units = Driver(loop_graph(policy={"maxUnits": 5, "unitCosts": {"review": 3}}))
    while units.run.status is Status.RUNNING:
        units.finish("VERDICT: FAIL" if units.run.stage == "review" else "done")
    assert "5 of 5 units used; the next call costs 3" in units.run.reason.message  # type: ignore[union-attr]
    units.apply(ev.BudgetRaised, by="alice", amounts={"units": 3})
    assert units.dispatched().stage == "review"


@pytest.mark.parametrize(
    ("setup", "amounts", "why"),
    [
        ("visits", {"calls": 2}, "not stopped by a budget (escalated, visit_budget_exhausted)"),
        ("running", {"calls": 2}, "not stopped by a budget (running)"),
        ("calls", {"usd": 2}, "sets no maxCostUsd"),
    ],
)
def test_a_raise_where_no_budget_stopped_the_run_is_refused_with_why(
    setup: str, amounts: dict[str, float], why: str
) -> None:
    # SPEC P5
    if setup == "visits":
        d = Driver(loop_graph(review={"maxVisits": 1}, policy={"maxCalls": 20}))
        while d.run.status is Status.RUNNING:
            d.finish("VERDICT: FAIL" if d.run.stage == "review" else "done")
    elif setup == "running":
        d = Driver(loop_graph(policy={"maxCalls": 5}))
    else:
        d = out_of_calls()
    before = d.run
    with pytest.raises(EventRejected, match=why.replace("(", r"\(").replace(")", r"\)")):
        d.apply(ev.BudgetRaised, by="alice", amounts=amounts)
    assert d.run is before and not before.ledger.raises


def test_the_same_raise_delivered_twice_is_applied_once() -> None:
    # SPEC P5, J2
    d = out_of_calls()
    d.apply(ev.BudgetRaised, key="raise-1", by="alice", amounts={"calls": 2})
    d.apply(ev.BudgetRaised, key="raise-1", by="alice", amounts={"calls": 2})
    assert d.run.policy.max_calls == 5 and d.run.ledger.raise_count == 1


def test_held_call_and_raises_survive_the_journal() -> None:
    # SPEC P5, J1: the record read back still knows the refused call and the raises
    d = out_of_calls()
    assert Run.from_journal(d.run.journal_json()) == d.run
    d.apply(ev.BudgetRaised, by="alice", amounts={"calls": 1})
    assert Run.from_journal(d.run.journal_json()).ledger.raises == d.run.ledger.raises
    assert d.run.ledger.by_category[Category.DELIVER].calls == 4


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ([], "names what to raise"),
        (["time=+3"], "`time=+3` is not a budget to raise"),
        (["calls"], "`calls` is not a budget to raise"),
        (["calls=+ten"], "`calls=+ten` is not a number"),
        (["calls=-2"], "does not raise anything"),
        (["usd=+0"], "does not raise anything"),
        (["usd=nan"], "does not raise anything"),
        (["calls=+1.5"], "is not a whole number"),
        (["calls=+1", "calls=+2"], "`calls` is raised twice"),
        (["calls=+1e300"], "`calls=+1e300` is more than one raise may add: at most 1e+06"),  # issue 28, part 7
        (["usd=+2000000"], "is more than one raise may add: at most 1e+06"),
    ],
)
def test_a_raise_written_wrong_is_refused_clearly(words: list[str], said: str) -> None:
    # SPEC P5
    with pytest.raises(RaiseInvalid, match=said.replace("+", r"\+")):
        parse_raise(words)


def test_a_raise_is_read_as_people_write_it() -> None:
    # SPEC P5
    expected: dict[str, Any] = {"calls": 10, "usd": 2.5, "units": 4, "attempts": 1}
    assert parse_raise(["calls=+10", "USD=+2.5", "units=4", "attempts=+1"]) == expected


def test_the_decision_file_offers_no_raise_when_a_price_is_missing() -> None:
    # SPEC P5: an unknown cost is not lifted by a raise; the file says to give the model a price
    d = Driver(loop_graph(policy={"maxCostUsd": 1.0}))
    d.finish("done", usage=Usage(cost_usd=None))
    assert d.run.held is not None and d.run.held.limit == ""
    text = render_decision(d.run, d.graph)
    assert "raise budget" not in text and "give the model a price" in text


def test_the_readme_says_what_a_budget_stop_and_a_raise_do() -> None:
    # SPEC P5: every sentence of "Budgets that pause" names what the engine does, in its own words
    readme = " ".join(doc("local/running.md", "graphs/engine.md").split())
    d = out_of_calls()
    calls_figures = d.run.reason.message.split(":")[0]  # type: ignore[union-attr]
    assert f"`{calls_figures}`" in readme
    units = Driver(loop_graph(policy={"maxUnits": 5, "unitCosts": {"review": 3}}))
    while units.run.status is Status.RUNNING:
        units.finish("VERDICT: FAIL" if units.run.stage == "review" else "done")
    assert f"`{units.run.reason.message.split(':')[0]}`" in readme  # type: ignore[union-attr]
    decision = d.of(Escalate)[0].decision
    for command in ("interlock budget RUN calls=+3", "/interlock budget calls=+3"):
        assert f"`{command.replace('RUN', d.run.id)}`" in decision and f"`{command}`" in readme
    assert "and recommends it once a result was accepted" in readme and d.run.decisions[-1].recommended == RAISE
    d.apply(ev.BudgetRaised, by="alice", amounts={"calls": 3})
    raised = d.run.ledger.json_data()
    assert set(raised["raises"][0]) == {"by", "at", "stage", "amounts"} and "raise_count" in raised
    assert f"(`ledger.raises`: `by`, `at`, `stage`, `amounts`, the newest {RAISE_WINDOW}; `raise_count`" in readme
    assert "listed under `budget raises:` in `interlock money`" in readme and "budget raises:" in money_report(d.run)
    assert f"the decision's outcome says `{d.run.decisions[-1].taken}` in `journey`" in readme
    assert d.dispatched().stage == "review" and "the call the budget refused is made, at the same stage" in readme
    for limit in LIMITS:
        assert f"`{limit}=+N`" in readme
    assert "| `interlock budget RUN calls=+N [usd=+N] [units=+N] [attempts=+N]` |" in readme
    assert "budget raised. **Effects**" in readme


@pytest.mark.parametrize("limit", ["attempts", "usd"])
def test_a_raise_past_what_a_number_holds_is_refused_and_changes_nothing(limit: str) -> None:
    # SPEC P5: a raise that would make a limit infinite is refused with why; it was an internal error
    # (OverflowError) for a counted limit, and an unlimited run once the journal wrote infinity as null
    d = Driver(loop_graph(policy={"maxCalls": 3, "maxAttempts": int(1e308), "maxCostUsd": 1e308}))
    while d.run.status is Status.RUNNING:
        d.finish("VERDICT: FAIL" if d.run.stage == "review" else "done")
    before = d.run
    with pytest.raises(EventRejected, match=f"{LIMITS[limit][1]} would be too large"):
        d.apply(ev.BudgetRaised, by="alice", amounts={limit: 1e308})
    assert d.run is before and not before.ledger.raises


def test_a_held_call_the_upgraded_graph_no_longer_makes_is_dropped_by_the_upgrade() -> None:
    # SPEC P5, J7: a budget held a decision call at `triage`; the run moves to a version where `triage` decides
    # nothing. A raise then made a decision call at a node that does not decide; now the held call goes with the
    # old version (the raise is refused, a resume re-enters the stage on the new graph)
    def triage(decide: bool) -> Any:
        nodes = [node("triage", decide=True) if decide else node("triage"), node("fix")]
        edges = [edge("triage", "BUG", "fix"), edge("fix", "PASS", "__end__")]
        return graph(nodes, edges, entry="triage", policy={"maxCalls": 1})

    d = Driver(triage(decide=True))
    d.finish("The stack trace shows a crash in parse().")
    assert d.run.held is not None and d.run.held.kind is MissionKind.DECIDE
    d.graph = parse_graph(triage(decide=False))
    d.apply(ev.GraphUpgraded, by="bob", graph_hash=d.graph.content_hash())
    assert d.run.held is None
    with pytest.raises(EventRejected, match="not stopped by a budget"):
        d.apply(ev.BudgetRaised, by="alice", amounts={"calls": 2})
    kept = Driver(triage(decide=True))  # a version where the held call still fits keeps it
    kept.finish("crash")
    moved = triage(decide=True)
    moved["nodes"][1]["maxVisits"] = 5
    kept.graph = parse_graph(moved)
    kept.apply(ev.GraphUpgraded, by="bob", graph_hash=kept.graph.content_hash())
    kept.apply(ev.BudgetRaised, by="alice", amounts={"calls": 2})
    assert kept.of(AskDecision)[0].stage == "triage"
