"""Never two jobs for one mission (issue 28, part 2): a resume or retry of a run whose mission's job still lives
is refused, from a comment, the web board or a check run's button alike.

Why: the engine lets a run whose mission is awaited be resumed — the way back when whatever ran the mission is
gone (a local runner killed, a job GitHub lost). On GitHub the job may well be alive: a second dispatch would pay
for the mission twice and two jobs would push to one branch. So before such a resume the App asks GitHub for the
mission's job (its workflow run, by the title the workflow gives it). It is *lost*, and only then may it run
again, when GitHub lists no live run for it, or the live one began longer ago than the workflow's timeouts allow:
GitHub cancels a job past its ``timeout-minutes``
(https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#jobsjob_idtimeout-minutes)
and a job queued for 24 hours
(https://docs.github.com/en/actions/administering-github-actions/usage-limits-billing-and-administration), so a
run still listed live past those is one whose end nobody told the App.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import yaml

from app.engine import events as ev
from app.engine.errors import EventRejected
from app.engine.record import Run, Status
from app.github.dispatched import DispatchedRun

if TYPE_CHECKING:
    from app.webhooks.shell import GitHubRuns

JOB_MINUTES = 360  # GitHub's timeout of a job whose workflow says none
MAX_MINUTES = 35 * 24 * 60  # a self-hosted runner's job is cancelled after 35 days whatever it says
QUEUED_FOR = timedelta(hours=24)  # GitHub cancels a job that waited this long for a runner
MARGIN = timedelta(minutes=10)  # GitHub's cancellation, and its webhook, take a moment


def refuse_live_mission(runs: GitHubRuns, run: Run, event: ev.Event) -> None:
    """Raise ``EventRejected`` for a resume that would dispatch a mission whose job GitHub still runs."""
    waiting = run.waiting
    if not isinstance(event, ev.Resume) or run.status is not Status.RUNNING or waiting is None:
        return
    if event.key in run.applied:  # a redelivery of the resume that dispatched this very job: the engine skips it
        return
    title = f"interlock {run.id} mission {waiting.seq} "
    jobs = [job for job in runs.api.dispatched_runs(runs.repo, run.branch) if job.title.startswith(title)]
    if not any(job.live for job in jobs):
        return
    minutes = workflow_minutes(runs)
    live = next((job for job in jobs if job.live and not lost(job, event.at, minutes)), None)
    if live is None:
        return
    since = live.started_at or live.created_at
    when = f" since {since:%Y-%m-%d %H:%M} UTC" if since else ""
    link = f" ({runs.api.web}/{runs.repo}/actions/runs/{live.id})" if live.id else ""
    why = (
        f"mission #{waiting.seq} ({waiting.stage}) is running{when}{link}: wait for it to end, or cancel its "
        "workflow run (`/interlock stop` stops the run when the job returns)"
    )
    raise EventRejected(run.id, run.status.value, type(event).__name__, why)


def lost(job: DispatchedRun, now: datetime, minutes: int) -> bool:
    """A run GitHub still lists live, but past what GitHub allows it: its end was never told."""
    if job.started_at is not None and job.status == "in_progress":
        return now - job.started_at > timedelta(minutes=minutes) + MARGIN
    began = job.created_at
    return began is not None and now - began > QUEUED_FOR + timedelta(minutes=minutes) + MARGIN


def workflow_minutes(runs: GitHubRuns) -> int:
    """The longest a mission's jobs may run, one after the other: the sum of the mission workflow's
    ``timeout-minutes`` on the default branch (``JOB_MINUTES`` for a job that says none, and for two jobs when
    the file cannot be read: the work job and the deliver job)."""
    path = f".github/workflows/{runs.config().workflow}"
    data = runs.api.file(runs.repo, path, runs.default_branch)
    try:
        jobs = (yaml.safe_load(data or b"") or {}).get("jobs")
    except (yaml.YAMLError, AttributeError):
        jobs = None
    if not isinstance(jobs, dict) or not jobs:
        return 2 * JOB_MINUTES
    return sum(_minutes(job) for job in jobs.values())


def _minutes(job: object) -> int:
    """A job's ``timeout-minutes``: GitHub's default for one that sets none, or a value no number can be (a string,
    ``.inf``); at most ``MAX_MINUTES`` (GitHub's own bound of a job)."""
    value = job.get("timeout-minutes") if isinstance(job, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value < float("inf"):
        return JOB_MINUTES
    return int(min(value, MAX_MINUTES))
