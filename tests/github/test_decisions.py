# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Decisions on GitHub (SPEC E2, E3): an escalation posts the decision file with each option as the exact
`/interlock` command; a writer's command ends the wait, and its outcome — who chose which option, when — is
posted once under the decision, kept in the record and appended to the decision file on `interlock/state`."""

from __future__ import annotations

import pytest

from app.engine.record import Choice, Status
from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures

SAID = "Decided: resume by alice at 2099-01-02 00:00:00 UTC (as recommended)."


def escalated(world: World) -> int:
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)  # a job that stored nothing: a failed mission
    assert world.run(issue).status is Status.FAILED
    return issue


def bodies(world: World) -> list[str]:
    return [comment["body"] for comment in world.fake.comments.values()]


def test_a_writers_command_ends_the_decision_and_its_outcome_is_posted_once(world: World) -> None:
    issue = escalated(world)
    [decision_file] = [body for body in bodies(world) if body.startswith("# Decision needed")]
    assert "| resume **(recommended)** | `interlock resume issue-1` | `/interlock resume` |" in decision_file
    assert "`/interlock abandon`" in decision_file and "## Recommendation" in decision_file
    world.comment(issue, "/interlock resume", user="mallory")  # read permission only: changes nothing
    assert world.run(issue).decisions[0].choice is None
    world.comment(issue, "/interlock resume")  # alice, a writer
    world.comment(issue, "/interlock resume")  # a second command on a run that waits on no decision
    [decision] = world.run(issue).decisions
    assert (decision.choice, decision.taken, decision.by) == (Choice.RESUME, "resume", "alice")
    outcome = [body for body in bodies(world) if SAID in body]
    assert len(outcome) == 1 and "<!-- interlock:effect run=issue-1 decided@1 -->" in outcome[0]
    assert bodies(world).index(outcome[0]) > bodies(world).index(decision_file)  # under the decision
    stored = world.fake.files_at(REPO, "interlock/state")["runs/issue-1/decision.md"]
    assert stored.startswith("# Decision needed") and stored.endswith(f"## Outcome\n\n{SAID}\n")


def test_a_redelivered_command_posts_no_second_outcome(world: World) -> None:
    # SPEC GH8, J2: the same delivery twice: one transition, one outcome comment
    issue = escalated(world)
    world.comment(issue, "/interlock resume")
    world.count -= 1  # the next delivery carries the same id: GitHub's redelivery
    world.comment(issue, "/interlock resume")
    assert sum(SAID in body for body in bodies(world)) == 1
    assert world.run(issue).decisions[0].by == "alice"


def test_an_outcome_lost_after_its_transition_was_saved_is_posted_on_redelivery(world: World) -> None:
    # SPEC GH8: the comment could not be posted (GitHub answered 500); the redelivery posts it, once
    issue = escalated(world)
    world.fake.fail("POST", f"/issues/{issue}/comments", 500, times=10)
    with pytest.raises(Exception, match="500"):
        world.comment(issue, "/interlock resume")
    world.fake.faults.clear()
    assert world.run(issue).decisions[0].choice is Choice.RESUME and not any(SAID in b for b in bodies(world))
    world.count -= 1
    world.comment(issue, "/interlock resume")
    world.count -= 1
    world.comment(issue, "/interlock resume")
    assert sum(SAID in body for body in bodies(world)) == 1
