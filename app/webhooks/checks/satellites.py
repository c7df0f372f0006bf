"""The run's check run on each satellite's pull request too (issue 28 part 5; SPEC W5, U7).

A satellite's pull request is part of the run: a reviewer there sees the run's state where they merge, as on
the main pull request. Each satellite with a pull request gets the ``Interlock`` check on its run branch's head,
made or brought up to date at every transition, through that satellite's installation (another account's when
it is elsewhere). Its external id names the main repository too (``owner/name#run-id``): the satellite's own
runs have ids of their own, and their checks are never taken for this one. Unlike the main check, none is
remembered between deliveries (one read per satellite per transition) and one left on an earlier head is not
marked as moved: the pull request shows only its head's.
"""

from __future__ import annotations

import logging

from app.engine.graph.model import Graph
from app.engine.record import Run
from app.github.checks import CheckView, check_view, checks_at_head, create_check, update_check
from app.github.client import GitHubError, Installation
from app.webhooks.teams.satellites import GitHubRuns, pulls_of

log = logging.getLogger("interlock.github")


def satellite_check_id(runs: GitHubRuns, run: Run) -> str:
    """The external id of the run's check in a satellite: the main repository's name and the run's id."""
    return f"{runs.repo}#{run.id}"


def show_satellite_checks(runs: GitHubRuns, run: Run, graph: Graph) -> None:
    """The run's check on the head of each satellite that has a pull request, as the record has it now."""
    view = check_view(run, graph, runs.repo, runs.api.redactor.text, runs.api.web)
    for repo in pulls_of(runs, run):
        if repo == runs.repo:
            continue
        try:
            _show_on(runs.api_of(repo), repo, run.branch, satellite_check_id(runs, run), view)
        except GitHubError as exc:
            if exc.status != 403:
                raise  # the delivery fails, and its redelivery shows the check
            log.warning("no check run in %s for %s: the installation may not write checks there", repo, run.id)


def _show_on(api: Installation, repo: str, branch: str, external_id: str, view: CheckView) -> None:
    found = checks_at_head(api, repo, branch)
    if found is None:
        return  # the branch is gone (merged and deleted): its last check stays as it was
    ours = next((check for check in found if check.get("external_id") == external_id), None)
    if ours is not None and not (view.status == "in_progress" and ours.get("status") == "completed"):
        if not view.shown_by(ours):
            update_check(api, repo, int(ours["id"]), view)
        return
    head = str(found[0]["head_sha"]) if found and found[0].get("head_sha") else api.ref(repo, branch)
    if head:
        create_check(api, repo, head, external_id, view)
