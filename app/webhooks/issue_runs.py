"""An issue's runs: `issue-N` for its first, then `issue-N-2`, `issue-N-3`… after each that ended (issue 11, 6).

A run keeps its id, branch (`interlock/<id>`) and record for good, so labelling an issue again after its run ended
starts a new run under the next id instead of colliding with the old branch. Everything that finds a run by its
issue's number (the label, the commands in its comments) reaches the latest run. The first run is read as before;
the next id is probed only after a run that ended, so an issue with one run costs no more GitHub reads than it did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from app.engine.events import Event
from app.engine.record import Run


class _RunFinder(Protocol):
    def find(self, run_id: str) -> Run | None: ...


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``), which imports this module."""

    @property
    def store(self) -> _RunFinder: ...

    def is_live(self, run: Run) -> bool: ...

    def apply(self, run_id: str, make: Callable[[Run], Event]) -> Run: ...


def run_id_for(issue: int, ended: int = 0) -> str:
    """The id of the issue's run that follows ``ended`` runs that ended: the one place a run id is chosen."""
    return f"issue-{issue}" if ended == 0 else f"issue-{issue}-{ended + 1}"


class _Ended(Exception):
    """The run an event was about to be applied to has ended; the issue may have a later run."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.id)
        self.run = run


def issue_runs(runs: GitHubRuns, issue: int, first: Run | None = None) -> list[Run]:
    """The issue's runs, first to latest (``first``: its first run, read already), up to a live one or the last."""
    found: list[Run] = []
    run = first or runs.store.find(run_id_for(issue))
    while run is not None:
        found.append(run)
        run = None if runs.is_live(run) else runs.store.find(run_id_for(issue, len(found)))
    return found


def replaced(runs: GitHubRuns, run: Run) -> bool:
    """Whether ``run`` ended and a later run of its issue started: the issue's labels and status are that run's
    now, so a redelivery of an event the ended run took (its merge, a job's end) owes the issue nothing."""
    issue = run.links.get("issue", "")
    if runs.is_live(run) or not issue.isdigit():
        return False
    ids = [found.id for found in issue_runs(runs, int(issue))]
    return run.id in ids[:-1]


def apply_to_issue(runs: GitHubRuns, issue: int, key: str, make: Callable[[Run], Event]) -> Run:
    """``make``'s event applied to the issue's latest run. The first run is read as the event is applied; only when
    it has ended are later ids probed. A redelivery of an event a replaced run took changes nothing: the issue's
    labels and state are the new run's now."""

    def unless_ended(run: Run) -> Event:
        if not runs.is_live(run):
            raise _Ended(run)
        return make(run)

    try:
        return runs.apply(run_id_for(issue), unless_ended)
    except _Ended as ended:
        found = issue_runs(runs, issue, ended.run)
        held = next((run for run in found if key in run.applied), None)
        if held is not None and held is not found[-1]:
            return held
        return runs.apply(found[-1].id, make)
