"""The decision file posted at every stop (SPEC E2, E3)."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.decision import recommend, render_decision
from app.engine.effects import Escalate
from app.engine.events import GitState
from app.engine.record import MissionStatus, Status
from tests.engine.driver import Driver, loop_graph


def exhausted_review_loop(git: GitState | None = None) -> Driver:
    d = Driver(loop_graph(work={"maxVisits": 2}), title="Add hello()", body="A greeting function.")
    for round_ in range(2):
        d.finish(f"implemented v{round_}")
        if round_ == 1:
            d.apply(
                ev.MissionFinished,
                seq=d.run.waiting.seq,
                status=MissionStatus.DONE,  # type: ignore[union-attr]
                answer="1. hello() ignores the name argument\nVERDICT: FAIL",
                git=git,
            )
        else:
            d.finish("1. no tests\nVERDICT: FAIL")
    return d


def test_decision_file_has_every_section() -> None:
    # SPEC E2
    git = GitState(head="a1b2c3d4e5f6a7b8", ahead=3, files_changed=("hello.py", "test_hello.py"), conflicts=())
    d = exhausted_review_loop(git)
    assert d.run.status is Status.ESCALATED
    text = d.of(Escalate)[0].decision
    assert "`visit_budget_exhausted`" in text and "stage 'work' was entered 3 times" in text
    assert "**Add hello()**" in text and "> A greeting function." in text
    assert "| 1 | work | 1 | PASS | review | engine |" in text and "| 2 | review | 1 | FAIL | work | engine |" in text
    assert "hello() ignores the name argument" in text and "1. no tests" in text
    assert "head `a1b2c3d4e5f6`, 3 commit(s) ahead of `develop`" in text and "`hello.py`" in text
    assert "stages visited more than once: `work` 3" in text


def test_options_name_the_exact_commands() -> None:
    # SPEC E3
    text = render_decision(exhausted_review_loop().run, exhausted_review_loop().graph)
    for command in (
        "`interlock resume run-1`",
        "`interlock resume run-1 --at review`",
        "`interlock route run-1 PASS`",
        "`interlock deliver run-1`",
        "`interlock abandon run-1`",
        "`/interlock resume at review`",
        "`/interlock route PASS`",
        "`/interlock deliver`",
        "`/interlock abandon`",
    ):
        assert command in text
    assert text.count("**(recommended)**") == 1


@pytest.mark.parametrize(
    ("setup", "choice"),
    [
        ("failed", "resume"),
        ("budget-nothing-accepted", "abandon"),
        ("unroutable-with-hint", "route FAIL"),
        ("conflicts", "resume"),
    ],
)
def test_recommendation_follows_rules(setup: str, choice: str) -> None:
    # SPEC E2: a recommendation computed by rules
    git = None
    if setup == "failed":
        d = Driver(loop_graph())
        d.finish("segfault", status=MissionStatus.CRASHED)
    elif setup == "budget-nothing-accepted":
        d = Driver(loop_graph(work={"requiresChanges": True}, policy={"maxAttempts": 2}))
        d.finish("nothing", commits=0)
        d.finish("nothing", commits=0)
    elif setup == "unroutable-with-hint":
        d = Driver(loop_graph())
        d.finish("done")
        d.finish("It mostly works but I lean to FAIL.\nVERDICT: UNSURE")
        d.finish("VERDICT: UNSURE")
    else:
        d = Driver(loop_graph())
        d.finish("x", status=MissionStatus.FAILED)
        git = GitState(head="abc", ahead=1, conflicts=("app.py",))
    assert d.run.status in (Status.ESCALATED, Status.FAILED)
    assert recommend(d.run, d.graph, git)[0] == choice


def passed_then_out_of_visits() -> Driver:
    """work PASS → review FAIL → work PASS → review a second time, over its budget: the last verdict is PASS."""
    d = Driver(loop_graph(review={"maxVisits": 1}))
    d.finish("built")
    d.finish("VERDICT: FAIL")
    d.finish("built again")
    assert d.run.status is Status.ESCALATED and d.run.missions[-1].verdict == "PASS"
    return d


@pytest.mark.parametrize(
    ("git", "choice", "alert"),
    [
        (GitState(head="abc", ahead=3, files_changed=("hello.py",)), "deliver", False),
        (GitState(head="abc", ahead=1), "resume", True),  # only the empty start commit
        (GitState(head="abc", ahead=3), "resume", True),  # commits that net to no change
        (None, "resume", False),  # the shell could not tell
    ],
)
def test_deliver_is_recommended_only_when_the_branch_changes_files(
    git: GitState | None, choice: str, alert: bool
) -> None:
    # SPEC E2: "the branch has work" means files changed against the base, not commits ahead of it
    d = passed_then_out_of_visits()
    assert recommend(d.run, d.graph, git)[0] == choice
    text = render_decision(d.run, d.graph, git)
    assert f"**{choice}** —" in text
    assert ("changes no file against `develop`" in text) is alert
