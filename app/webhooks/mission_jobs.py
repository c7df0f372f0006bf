"""A run's mission jobs on GitHub (SPEC GH3): each mission, decision or advice is a ``workflow_dispatch`` of the
mission workflow on the run branch, titled ``interlock <run> mission <seq> (<stage>)``.

Apart from the GitHub shell (``app/webhooks/shell.py``, which calls these where an effect dispatches a job or a
redelivery looks for one): the shell says which effect owes a job; how a job is started, found again by its title
and linked to its log is GitHub Actions' business.
"""

from __future__ import annotations

from typing import Protocol

from app.engine.record import Run
from app.github.client import Installation
from app.github.config import RepoConfig
from app.github.teams import TeamSettings


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``, which imports this module)."""

    api: Installation
    repo: str

    def config(self) -> RepoConfig: ...

    def team_of(self, run: Run) -> TeamSettings: ...


def dispatch(runs: GitHubRuns, run: Run, seq: int, capability: str) -> str | None:
    """A ``workflow_dispatch`` of the mission workflow on the run branch (SPEC GH3), on the capability's
    runners; the link to its log, when GitHub names the job. The workflow that runs is the base branch's: the job
    that pushes refuses any agent commit that touches ``.github/workflows/`` (``app/runner/job.py``)."""
    summary = run.mission(seq)
    stage = summary.stage if summary else run.stage
    inputs = {"run": run.id, "mission": str(seq), "stage": stage, "runner": runs.team_of(run).runs_on(capability)}
    workflow_run = runs.api.dispatch(runs.repo, runs.config().workflow, run.branch, inputs)
    return job_url(runs, workflow_run) if workflow_run else None


def job_of(runs: GitHubRuns, run: Run, seq: int) -> tuple[bool, str | None]:
    """Whether the mission has a job among the branch's dispatched runs, and the link to its log."""
    title = f"interlock {run.id} mission {seq} "
    found = [job.id for job in runs.api.dispatched_runs(runs.repo, run.branch) if job.title.startswith(title)]
    return bool(found), (job_url(runs, found[0]) if found and found[0] is not None else None)


def job_url(runs: GitHubRuns, workflow_run: int) -> str:
    return f"{runs.api.web}/{runs.repo}/actions/runs/{workflow_run}"


def has_other_job(runs: GitHubRuns, title: str, branch: str) -> bool:
    """Whether more than one dispatched job carries this title (a duplicate the concurrency group cancelled)."""
    return sum(t == title for t in runs.api.dispatched_titles(runs.repo, branch)) > 1
