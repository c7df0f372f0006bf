"""The questions a run waits on are kept in its record, so every view can show them in full (SPEC V6, J5)."""

from __future__ import annotations

from app.engine import events as ev
from app.engine.record import QUESTIONS_BYTES, Run, Status
from tests.engine.driver import Driver, loop_graph

QUESTIONS = "Two things:\n1. Which language?\n2. Which file?"


def test_needs_input_keeps_every_line_of_the_questions_without_the_verdict() -> None:
    # SPEC V6: the answer carries questions for a person; the record holds them all, the verdict line aside
    d = Driver(loop_graph())
    d.finish(f"{QUESTIONS}\nVERDICT: NEEDS_INPUT")
    assert d.run.status is Status.AWAITING_INPUT and d.run.questions == QUESTIONS
    assert Run.from_journal(d.run.journal_json()).questions == QUESTIONS  # in the journal, under that name
    d.apply(ev.InputAnswered, text="Python, in hello.py")
    assert d.run.status is Status.RUNNING and d.run.questions == ""


def test_questions_leave_the_record_when_the_run_stops_waiting_for_them() -> None:
    d = Driver(loop_graph())
    d.finish("Which file?\nVERDICT: NEEDS_INPUT")
    d.apply(ev.StopRequested)
    assert d.run.status is Status.INTERRUPTED and d.run.questions == ""
    d.apply(ev.Resume)
    d.finish("Still: which file?\n**VERDICT: needs_input**")
    assert d.run.questions == "Still: which file?"
    d.apply(ev.Abandon)
    assert d.run.status is Status.CANCELLED and d.run.questions == ""


def test_long_questions_are_cut_and_point_at_the_mission_record() -> None:
    # SPEC J5: the record stays bounded; C5: the whole answer is in the mission record it names
    d = Driver(loop_graph())
    seq = d.dispatched().seq
    d.finish("é" * QUESTIONS_BYTES + "\nVERDICT: NEEDS_INPUT")
    kept = d.run.questions
    assert kept.startswith("é" * 100) and kept.endswith(f"the full text is in mission record #{seq} …]")
    assert len(kept.encode("utf-8")) < QUESTIONS_BYTES + 100


def test_an_answer_that_only_says_needs_input_still_tells_the_person() -> None:
    d = Driver(loop_graph())
    d.finish("VERDICT: NEEDS_INPUT")
    assert d.run.status is Status.AWAITING_INPUT and "wrote no question" in d.run.questions
