"""A run's pull request on GitHub (SPEC GH4, GH5): opened as a draft at the first gate or ready at the end, found
again when the save that linked it failed, and its review requested from the team's gatekeepers.

Apart from the GitHub shell (``app/webhooks/shell.py``, which calls these where an effect opens, readies or
gates the pull request): the record keeps the pull request's number and node id as the run's links ``pr`` and
``pr_node``; everything else about it is GitHub's. Satellites' pull requests: ``app/webhooks/teams/satellites.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from app.engine.events import Event, Linked
from app.engine.record import Run
from app.github.client import Installation
from app.github.teams import TeamSettings
from app.runner.driver import Applied


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``, which imports this module)."""

    api: Installation
    repo: str

    def record(self, run_id: str, make: Callable[[Run], Event]) -> Applied: ...

    def team_of(self, run: Run) -> TeamSettings: ...


def open_pull(runs: GitHubRuns, run: Run, draft: bool) -> Run:
    """The run's pull request, opened unless the record links one already."""
    if "pr" in run.links:
        return run
    title = f"{run.request.title} (Interlock run {run.id})"
    body = f"Run `{run.id}` for #{run.links.get('issue', '?')}. Merging is a person's decision."
    return _link_pull(runs, run, runs.api.create_pull(runs.repo, run.branch, run.base, title, body, draft))


def link_open_pull(runs: GitHubRuns, run: Run) -> Run:
    """The run branch's open pull request linked to the run, when the record does not know it yet (it was
    opened, and the save that links it failed)."""
    if "pr" in run.links:
        return run
    found = runs.api.open_pull(runs.repo, run.branch)
    return _link_pull(runs, run, found) if found else run


def _link_pull(runs: GitHubRuns, run: Run, pull: dict[str, Any]) -> Run:
    links = {"pr": str(pull["number"]), "pr_node": pull["node_id"]}
    return runs.record(run.id, lambda r: Linked(key=f"{r.id}/pr", at=r.updated_at, links=links)).run


def ready_pull(runs: GitHubRuns, run: Run) -> Run:
    """The run's pull request ready for review: the draft marked ready, or opened ready if there is none."""
    if "pr" not in run.links:
        return open_pull(runs, run, draft=False)
    runs.api.mark_ready(run.links["pr_node"])
    return run


def request_review(runs: GitHubRuns, run: Run) -> None:
    """The gate's review asked of the team's gatekeepers, on the run's pull request."""
    if "pr" in run.links:
        runs.api.request_reviewers(runs.repo, int(run.links["pr"]), runs.team_of(run).gatekeepers)
