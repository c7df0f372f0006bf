"""Decisions kept with their outcome (SPEC E2, E3): the record remembers each stop handed to a person, what
was offered and recommended, and, when a person's command ended the wait, the option taken, by whom and when."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.decisions import outcome_text
from app.engine.effects import MessageKind, PostMessage
from app.engine.owed import owed_effects
from app.engine.record import DECISION_WINDOW, Choice, MissionStatus, ReasonCode, Status
from tests.engine.driver import T0, Driver, loop_graph


def failed() -> Driver:
    """A run whose first mission crashed: failed at ``work``, a decision waiting."""
    driver = Driver(loop_graph())
    driver.finish("segfault", status=MissionStatus.CRASHED)
    assert driver.run.status is Status.FAILED
    return driver


def decided(driver: Driver) -> list[PostMessage]:
    return [e for e in driver.of(PostMessage) if e.kind is MessageKind.DECIDED]


def test_a_stop_records_the_decision_with_its_options_and_recommendation() -> None:
    # SPEC E2: the reason, every option the decision file offers, the rules' recommendation
    driver = failed()
    [decision] = driver.run.decisions
    assert (decision.number, decision.stage, decision.reason) == (1, "work", ReasonCode.MISSION_FAILED)
    assert decision.options == ["resume", "resume at review", "route PASS", "deliver", "abandon"]
    assert decision.recommended == "resume" and decision.choice is None and decision.by == ""
    assert decision.after_mission == 1 and decision.asked_at == driver.run.updated_at


@pytest.mark.parametrize(
    ("kind", "fields", "choice", "taken"),
    [
        (ev.Resume, {}, Choice.RESUME, "resume"),
        (ev.Resume, {"stage": "review"}, Choice.RESUME, "resume at review"),
        (ev.Resume, {"stage": "work"}, Choice.RESUME, "resume"),
        (ev.RouteChosen, {"verdict": "pass"}, Choice.ROUTE, "route PASS"),
        (ev.Deliver, {}, Choice.DELIVER, "deliver"),
        (ev.Abandon, {}, Choice.ABANDON, "abandon"),
    ],
)
def test_a_persons_command_records_the_option_taken_by_whom_and_when(
    kind: type[ev.Event], fields: dict[str, str], choice: Choice, taken: str
) -> None:
    # SPEC E3: the outcome is recorded by the transition of the command that ended the wait
    driver = failed()
    driver.apply(kind, by="alice", **fields)
    [decision] = driver.run.decisions
    assert (decision.choice, decision.taken, decision.by) == (choice, taken, "alice")
    assert decision.decided_at == driver.run.updated_at
    [said] = decided(driver)
    when = f"{decision.decided_at:%Y-%m-%d %H:%M:%S}"
    assert said.text == outcome_text(decision) and f"Decided: {taken} by alice at {when} UTC" in said.text


def test_the_outcome_says_whether_the_recommendation_was_followed() -> None:
    driver = failed()
    driver.apply(ev.Abandon, by="bob")
    assert decided(driver)[0].text.endswith("(recommended: resume).")
    again = failed()
    again.apply(ev.Resume, by="bob")
    assert decided(again)[0].text.endswith("(as recommended).")


def test_a_command_without_a_name_is_decided_by_a_person() -> None:
    driver = failed()
    driver.apply(ev.Resume)
    assert driver.run.decisions[0].by == "a person"


def test_a_refused_command_decides_nothing() -> None:
    driver = failed()
    before = driver.run
    with pytest.raises(Exception, match="no edge"):
        driver.apply(ev.RouteChosen, verdict="MAYBE", by="alice")
    assert driver.run is before and driver.run.decisions[0].choice is None


def test_a_resume_of_a_stop_a_person_asked_for_records_no_decision() -> None:
    # a stop on request writes no decision file (README), so none is decided
    driver = Driver(loop_graph())
    driver.apply(ev.StopRequested)
    driver.finish("VERDICT: PASS")
    assert driver.run.status is Status.INTERRUPTED
    driver.apply(ev.Resume, by="alice")
    assert driver.run.decisions == [] and decided(driver) == []


def test_the_outcome_is_owed_by_the_transition_that_decided_and_only_by_it() -> None:
    # SPEC GH8: a redelivery of the command can say the outcome again, from the record alone
    driver = failed()
    driver.apply(ev.Resume, by="alice")
    [said] = decided(driver)
    assert said in owed_effects(driver.run, driver.graph)
    driver.finish("VERDICT: PASS")
    assert not [e for e in owed_effects(driver.run, driver.graph) if getattr(e, "kind", None) == "decided"]


def test_an_abandon_owes_its_outcome_beside_the_labels() -> None:
    driver = failed()
    driver.apply(ev.Abandon, by="alice")
    assert [type(e).__name__ for e in owed_effects(driver.run, driver.graph)] == ["PostMessage", "Finish"]


def test_the_record_keeps_the_newest_decisions_only() -> None:
    # SPEC J5: bounded whatever the length of the run; the count goes on
    driver = Driver(loop_graph())
    for _ in range(DECISION_WINDOW + 3):
        driver.finish("boom", status=MissionStatus.FAILED)
        driver.apply(ev.Resume, by="alice")
    assert len(driver.run.decisions) == DECISION_WINDOW and driver.run.decision_count == DECISION_WINDOW + 3
    assert [d.number for d in driver.run.decisions] == list(range(4, DECISION_WINDOW + 4))
    assert all(d.choice is Choice.RESUME for d in driver.run.decisions)
    assert driver.run.decisions[0].asked_at > T0


def test_the_decisions_survive_the_journal() -> None:
    driver = failed()
    driver.apply(ev.Resume, by="alice")
    again = type(driver.run).from_journal(driver.run.journal_json())
    assert again.decisions == driver.run.decisions and again.decisions[0].choice is Choice.RESUME
