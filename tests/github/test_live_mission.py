# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Never two jobs for one mission on GitHub (issue 28, part 2): a resume or retry while the mission's job runs is
refused with a reply and dispatches nothing; a job GitHub ended without telling, or one running past what the
workflow's timeouts allow, is lost, and only then runs again (``app/webhooks/live_mission.py``)."""

from __future__ import annotations

import pytest

from app.engine.record import Status
from app.webhooks.live_mission import JOB_MINUTES, workflow_minutes
from tests.github.test_advisor_flows import advised, failed_first_mission  # noqa: F401 - fixture
from tests.github.test_check_runs import checks, clicked_on
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture

SAID = "2099-01-02T00:00:00Z"  # when World.comment's commands are written
WORKFLOW = "jobs:\n  work:\n    timeout-minutes: 90\n  deliver:\n    timeout-minutes: 15\n"


def started(world: World, at: str, status: str = "in_progress") -> int:
    """A run whose mission 1 (build) has a job GitHub lists ``status`` since ``at``: its issue."""
    world.fake.commit_file(REPO, "main", ".github/workflows/interlock.yml", WORKFLOW)
    _, issue = world.label()
    [job] = world.fake.job_states
    world.fake.job_states[job] = {"status": status, "created_at": at, "run_started_at": at}
    return issue


def last_reply(world: World) -> str:
    return str(list(world.fake.comments.values())[-1]["body"])


@pytest.mark.parametrize("command", ["/interlock retry", "/interlock resume", "/interlock resume at review"])
def test_a_resume_while_the_missions_job_runs_is_refused_and_dispatches_nothing(world: World, command: str) -> None:
    issue = started(world, "2099-01-01T23:30:00Z")
    before = world.run(issue)
    world.comment(issue, command)
    assert last_reply(world) == (
        "@alice run issue-1 (running): cannot apply Resume: mission #1 (build) is running since 2099-01-01 23:30 UTC "
        f"(http://github.test/{REPO}/actions/runs/5001): wait for it to end, or cancel its workflow run "
        "(`/interlock stop` stops the run when the job returns); nothing changed."
    )
    assert len(world.fake.dispatches) == 1 and world.run(issue).version == before.version


def test_a_queued_job_is_live_too(world: World) -> None:
    issue = started(world, "2099-01-01T12:00:00Z", status="queued")  # twelve hours waiting for a runner
    world.comment(issue, "/interlock retry")
    assert "mission #1 (build) is running since 2099-01-01 12:00 UTC" in last_reply(world)
    assert len(world.fake.dispatches) == 1


def test_a_job_github_ended_without_telling_is_lost_and_a_retry_runs_it_again(world: World) -> None:
    issue = started(world, "2099-01-01T23:30:00Z")
    world.fake.job_ended("issue-1", 1, "completed")  # cancelled, its workflow_run event never delivered
    world.comment(issue, "/interlock retry")
    assert [d["inputs"]["mission"] for d in world.fake.dispatches] == ["1", "2"]
    assert world.run(issue).status is Status.RUNNING and world.run(issue).waiting.seq == 2


@pytest.mark.parametrize(("began", "lost"), [("2099-01-01T22:00:00Z", True), ("2099-01-01T22:10:00Z", False)])
def test_a_job_running_past_the_workflows_timeouts_is_lost(world: World, began: str, lost: bool) -> None:
    # 90 + 15 minutes of timeout-minutes and a 10-minute margin: 115 minutes; 120 minutes is lost, 110 is live
    issue = started(world, began)
    world.comment(issue, "/interlock retry")
    assert len(world.fake.dispatches) == (2 if lost else 1)
    assert ("is running since" in last_reply(world)) is not lost


def test_a_check_runs_retry_of_a_live_mission_dispatches_nothing(world: World) -> None:
    # a click on a button shown while the run was failed, arriving after a retry dispatched the job again: the
    # check run offers no Retry while the run runs (app/github/checks.py), so the click never reaches the guard;
    # this holds the promise for the check run's buttons, the guard's own tests are above and the board's
    issue = started(world, "2099-01-01T23:30:00Z")
    world.job_done(issue, 1, "build", "", store_record=False)  # failed: the check run offers Retry
    button = checks(world)[-1]
    world.comment(issue, "/interlock retry")
    [_, job] = sorted(world.fake.job_states)
    world.fake.job_states[job] = {"status": "in_progress", "created_at": SAID, "run_started_at": SAID}
    world.count += 1
    world.router.dispatch(clicked_on(button, world, "retry"))
    assert len(world.fake.dispatches) == 2 and world.run(issue).waiting.seq == 2


def test_the_workflow_minutes_are_the_sum_of_its_jobs_timeouts(world: World) -> None:
    runs = world.runs()
    assert workflow_minutes(runs) == 2 * JOB_MINUTES  # no workflow file: GitHub's default for two jobs
    world.fake.commit_file(REPO, "main", ".github/workflows/interlock.yml", WORKFLOW)
    assert workflow_minutes(world.runs()) == 105
    world.fake.commit_file(
        REPO, "main", ".github/workflows/interlock.yml", "jobs:\n  a: {}\n  b:\n    timeout-minutes: 5\n"
    )
    assert workflow_minutes(world.runs()) == JOB_MINUTES + 5
    world.fake.commit_file(REPO, "main", ".github/workflows/interlock.yml", ": not yaml [")
    assert workflow_minutes(world.runs()) == 2 * JOB_MINUTES


def test_the_readme_says_when_a_mission_is_live_and_when_lost() -> None:
    # the tests above, tests/webhooks/test_live_mission_board.py and tests/local/test_live_mission.py are the
    # behaviour; these are the words
    from tests.helpers import doc

    text = " ".join(doc("operating/service.md", "operating/board.md").split())
    for words in (
        "A `resume` or `retry` (a comment, the web board, a check run's button) of a run whose mission's job (an "
        "advisor's or a decision's too) GitHub still lists queued or in progress is refused with a reply, and "
        "nothing is dispatched",
        "the sum of its jobs' `timeout-minutes` on the default branch (360 for a job that sets none, GitHub's "
        "default) and 10 minutes more",
        "a job still queued counts as live for 24 hours more",
        "a second command is refused with `run RUN is being executed by process N: mission #3 (review) is running "
        "since …; use `interlock stop RUN` first` (exit 2)",
    ):
        assert words in text, words


@pytest.mark.parametrize(
    ("timeout", "minutes"),
    [(".inf", JOB_MINUTES), ("100000000000000", 35 * 24 * 60), ("'90'", JOB_MINUTES), ("-5", JOB_MINUTES)],
)
def test_a_timeout_no_job_can_have_is_read_as_github_would(world: World, timeout: str, minutes: int) -> None:
    # a workflow file is the repository's: odd numbers never crash the guard (found by a hostile review)
    world.fake.commit_file(
        REPO, "main", ".github/workflows/interlock.yml", f"jobs:\n  a:\n    timeout-minutes: {timeout}\n"
    )
    assert workflow_minutes(world.runs()) == minutes


def test_a_listing_time_without_a_zone_is_utc(world: World) -> None:
    issue = started(world, "2099-01-01T23:30:00")  # no "Z": read as GitHub's UTC, never a crash
    world.comment(issue, "/interlock retry")
    assert "is running since 2099-01-01 23:30 UTC" in last_reply(world) and len(world.fake.dispatches) == 1


def test_a_retry_while_an_advisors_job_runs_is_refused(advised: World) -> None:
    # an advisor's answer is a job of its own (found by a hostile review: it was skipped, and dispatched twice)
    from app.engine.record import MissionKind

    advised.fake.commit_file(REPO, "main", ".github/workflows/interlock.yml", WORKFLOW)
    issue = failed_first_mission(advised)
    assert advised.run(issue).waiting.kind is MissionKind.ADVISOR
    job = max(advised.fake.job_states)
    advised.fake.job_states[job] = {"status": "in_progress", "created_at": SAID, "run_started_at": SAID}
    before = len(advised.fake.dispatches)
    advised.comment(issue, "/interlock retry")
    assert len(advised.fake.dispatches) == before and "is running since" in last_reply(advised)
