"""A run whose graph stored on the state branch cannot be read (issue 13): the branch is a repository branch
anyone with push access can rewrite, so its graph may be gone, cut short or no graph at all. Each event of that
run is refused like a bad configuration — answered 422, nothing changed, redelivered once a person restored the
file — never a 5xx, and the run's issue is told which file and how to fix it, once per state commit."""

from __future__ import annotations

import logging

from app.engine.errors import GraphInvalid
from app.github.config import ConfigInvalid
from app.runner.driver import StoredGraphUnreadable
from app.store.journal import STATE_BRANCH, graph_path
from app.webhooks.shell import GitHubRuns

GRAPH_ERRORS = (StoredGraphUnreadable, GraphInvalid)  # missing or not JSON; JSON but no graph
log = logging.getLogger("interlock.webhooks")


class StoredGraphRefused(ConfigInvalid):
    """A run's event refused because its stored graph cannot be read: a person restores the file, then
    redelivers (422, as for a bad configuration)."""


def graph_refused(runs: GitHubRuns, run_id: str, exc: Exception, issue: int | None = None) -> StoredGraphRefused:
    """The log line and the issue's comment for an event of ``run_id`` whose stored graph cannot be read; the
    error to raise. ``issue``: the run's issue, else read from its record."""
    path = graph_path(run_id)
    text = (
        f"Interlock cannot go on with run `{run_id}`: its graph, stored as `{path}` on the `{STATE_BRANCH}` branch "
        f"of {runs.repo}, cannot be read ({exc}). Nothing changed: this event was refused. To fix it, restore the "
        f"file from the branch's history (`git log {STATE_BRANCH} -- {path}`), then redeliver the failed delivery "
        "(`interlock redeliver`)."
    )
    log.warning("refused an event of run %s in %s: %s", run_id, runs.repo, exc)
    if issue is None:
        run = runs.store.find(run_id)
        issue = int(run.links.get("issue") or 0) if run is not None else None
    if issue:
        mark = f"<!-- interlock:graph-unreadable run={run_id} head={runs.api.ref(runs.repo, STATE_BRANCH)} -->"
        runs.api.comment_once(runs.repo, issue, text, mark)
    return StoredGraphRefused(text)
