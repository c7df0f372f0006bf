"""The decision file covers the satellite repositories of a run (SPEC E2, U7, P4)."""

from __future__ import annotations

from app.engine.decision import recommend, render_decision
from app.engine.events import GitState
from tests.engine.test_decision import passed_then_out_of_visits

DOCS = GitState(head="d0c5d0c5d0c5d0c5", ahead=1, files_changed=("guide.md",))


def test_work_in_a_satellite_alone_is_work_to_deliver() -> None:
    # SPEC U7: the run branch changes no file, its satellite does: the delivery has work, no "no file" alert
    d = passed_then_out_of_visits()
    git = GitState(head="abc", ahead=1, satellites=(("octo/docs", DOCS),))
    assert recommend(d.run, d.graph, git)[0] == "deliver"
    text = render_decision(d.run, d.graph, git)
    assert "- satellite `octo/docs`: head `d0c5d0c5d0c5`, 1 commit(s) ahead, files changed: `guide.md`" in text
    assert "changes no file against `develop`" not in text


def test_a_conflict_in_a_satellite_is_resolved_first() -> None:
    d = passed_then_out_of_visits()
    git = GitState(
        head="abc",
        ahead=2,
        files_changed=("a.py",),
        satellites=(("octo/docs", GitState(head="d", ahead=1, files_changed=("guide.md",), conflicts=("guide.md",))),),
    )
    choice, why = recommend(d.run, d.graph, git)
    assert choice == "resume" and "conflicts" in why
    assert "conflicts: guide.md" in render_decision(d.run, d.graph, git)
