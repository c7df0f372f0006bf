"""The run's check run kept current (SPEC W5); its buttons are ``app/webhooks/check_actions.py``.

After every transition (and on a redelivery) the shell shows the run on the check run of the run branch's head
(``app/github/checks.py``): found there again, updated only when what it shows changed, created on a head that
has none — a mission's commits moved the head, and the check left in progress on an earlier commit says where
the run went — or when a check that completed must show the run working again (GitHub's newest check run of a
name is the one a pull request shows). An installation that has not granted
the Checks permission (403) gets no check and loses nothing else: `interlock doctor` names the permission.
"""

from __future__ import annotations

import logging
from typing import Protocol

from app.engine.graph import Graph
from app.engine.record import Run
from app.github.checks import branch_checks, check_view, checks_at_head, create_check, moved_on, update_check
from app.github.client import GitHubError, Installation

log = logging.getLogger("interlock.github")


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``), which imports this module."""

    api: Installation
    repo: str


def show_check(runs: GitHubRuns, run: Run, graph: Graph) -> None:
    """The run's check on its branch's head as the record has it now; no call beyond the read when it shows
    that already."""
    try:
        _show(runs, run, graph)
    except GitHubError as exc:
        if exc.status != 403:
            raise  # the delivery fails, and its redelivery shows the check (``GitHubRuns.reconcile``)
        log.warning("no check run for %s: the installation may not write checks (%s)", run.id, exc)


def _show(runs: GitHubRuns, run: Run, graph: Graph) -> None:
    found = checks_at_head(runs.api, runs.repo, run.branch)
    if found is None:
        return  # the run branch is gone (merged and deleted): its last check stays as it was
    view = check_view(run, graph, runs.repo, runs.api.redactor.text)
    ours = next((check for check in found if check.get("external_id") == run.id), None)
    if ours is not None and not (view.status == "in_progress" and ours.get("status") == "completed"):
        if not view.shown_by(ours):
            update_check(runs.api, runs.repo, int(ours["id"]), view)
        return
    head: str | None
    left: list[int] = []
    if found and found[0].get("head_sha"):  # a check listed is on the head already: its sha saves a read
        head = str(found[0]["head_sha"])
    else:  # none on the head: a new run, or a mission's commits moved it, leaving the run's check behind
        head, left = branch_checks(runs.api, runs.repo, run.branch, run.id)
    if head is None:
        return
    create_check(runs.api, runs.repo, head, run.id, view)
    for check_id in left:
        update_check(runs.api, runs.repo, check_id, moved_on(view, head))
