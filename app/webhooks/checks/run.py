"""The run's check run kept current (SPEC W5); its buttons are ``app/webhooks/checks/actions.py``.

After every transition (and on a redelivery) the shell shows the run on the check run of the run branch's head
(``app/github/checks.py``): found there again, updated only when what it shows changed, created on a head that
has none — a mission's commits moved the head, and the check left in progress on an earlier commit says where
the run went — or when a check that completed must show the run working again (GitHub's newest check run of a
name is the one a pull request shows). An installation that has not granted
the Checks permission (403) gets no check and loses nothing else: `interlock doctor` names the permission.

The check carries the run's progress at every transition, so it is the one status update an ordinary transition
makes (issue 16): the check run this process made or found last for a run is remembered (``KNOWN``: its id, the
commit it is on, what it shows), and the run branch's head is read with the record in the same call
(``GitHubStore.run_heads``), so while the head has not moved the update is one PATCH and no read, and when a
mission's commits moved it, a new check there and the old one marked as moved on, in one GraphQL request
(``app/github/check_move.py``) and no read either. Anything else —
another process, a redelivery, a check deleted — takes the reads above.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol
from weakref import WeakKeyDictionary

from app.engine.anchor import settled
from app.engine.graph.model import Graph
from app.engine.record import Run
from app.github.check_move import move_check
from app.github.checks import (
    CheckView,
    MadeCheck,
    branch_checks,
    check_view,
    checks_at_head,
    create_check,
    moved_on,
    update_check,
)
from app.github.client import GitHubApp, GitHubError, Installation
from app.runner.chain import head_anchor
from app.store.github import GitHubStore

log = logging.getLogger("interlock.github")
KNOWN_RUNS = 1024  # runs whose check this process remembers


@dataclass(frozen=True)
class KnownCheck:
    """A check run as this process last made or updated it: its id, its commit, the fields it shows and the run's
    version it shows (another replica's transition since then may have changed the check: it is read again)."""

    id: int
    head: str
    shown: dict[str, Any]
    version: int = -1
    node: str = ""  # its node id, which GraphQL names it by ("": unknown)


KNOWN: WeakKeyDictionary[GitHubApp, OrderedDict[tuple[str, str], KnownCheck]] = WeakKeyDictionary()


def known_checks(runs: GitHubRuns) -> OrderedDict[tuple[str, str], KnownCheck]:
    """The checks this service (its ``GitHubApp``) remembers, by repository and run id."""
    return KNOWN.setdefault(runs.app, OrderedDict())


def remember(runs: GitHubRuns, run_id: str, check: KnownCheck) -> None:
    known = known_checks(runs)
    known[(runs.repo, run_id)] = check
    known.move_to_end((runs.repo, run_id))
    while len(known) > KNOWN_RUNS:
        known.popitem(last=False)


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``), which imports this module."""

    app: GitHubApp
    api: Installation
    repo: str
    store: GitHubStore


def show_check(runs: GitHubRuns, run: Run, graph: Graph, remembered: bool = True) -> bool:
    """The run's check on its branch's head as the record has it now; no call beyond the read when it shows
    that already. ``remembered``: the check this process remembers may be used (not on a redelivery, which reads
    what GitHub shows, since what failed may be the check's update). ``False`` when the installation may not
    write checks: the status comment is then the run's only status, edited at every transition as before."""
    try:
        _show(runs, run, graph, remembered)
    except GitHubError as exc:
        if exc.status != 403:
            raise  # the delivery fails, and its redelivery shows the check (``GitHubRuns.reconcile``)
        log.warning("no check run for %s: the installation may not write checks (%s)", run.id, exc)
        return False
    return True


def _show(runs: GitHubRuns, run: Run, graph: Graph, remembered: bool) -> None:
    anchor = head_anchor(run, runs.store.heads.get(run.id, ""))  # SPEC J6: the chain's head, App-written
    view = check_view(run, graph, runs.repo, runs.api.redactor.text, runs.api.web, anchor)
    try:
        if remembered and _show_known(runs, run, view):
            return
    except GitHubError as exc:
        if exc.status not in (404, 422):
            raise
        known_checks(runs).pop((runs.repo, run.id), None)  # deleted, or its commit gone: found again below
    found = checks_at_head(runs.api, runs.repo, run.branch)
    if found is None:
        return  # the run branch is gone (merged and deleted): its last check stays as it was
    ours = next((check for check in found if check.get("external_id") == run.id), None)
    if ours is not None and (kept := settled(anchor, summary_of(ours))) != anchor:
        view = check_view(run, graph, runs.repo, runs.api.redactor.text, runs.api.web, kept)  # SPEC J6: as shown
    if ours is not None and not (view.status == "in_progress" and ours.get("status") == "completed"):
        if not view.shown_by(ours):
            update_check(runs.api, runs.repo, int(ours["id"]), view)
        head_sha, node = str(ours.get("head_sha") or ""), str(ours.get("node_id") or "")
        remember(runs, run.id, KnownCheck(int(ours["id"]), head_sha, view.fields(), run.version, node))
        return
    head: str | None
    left: list[int] = []
    if found and found[0].get("head_sha"):  # a check listed is on the head already: its sha saves a read
        head = str(found[0]["head_sha"])
    else:  # none on the head: a new run, or a mission's commits moved it, leaving the run's check behind
        head, left = branch_checks(runs.api, runs.repo, run.branch, run.id)
    if head is None:
        return
    made = create_check(runs.api, runs.repo, head, run.id, view)
    remember(runs, run.id, KnownCheck(made.id, head, view.fields(), run.version, made.node))
    for check_id in left:
        update_check(runs.api, runs.repo, check_id, moved_on(view, head))


def summary_of(check: dict[str, Any]) -> str:
    return str((check.get("output") or {}).get("summary") or "")


def _show_known(runs: GitHubRuns, run: Run, view: CheckView) -> bool:
    """The remembered check updated without a read, when the run branch's head read with the record is still the
    commit it is on; ``False`` when this process cannot tell (the caller then reads)."""
    known = known_checks(runs).get((runs.repo, run.id))
    head = runs.store.run_heads.get(run.id)
    branch_of = runs.store.branch_of
    if known is None or head is None or branch_of is None or branch_of(run.id) != run.branch:
        return False
    if runs.store.read_from.get(run.id) != known.version:
        return False  # a transition this process did not show came between: another replica's, its check unknown
    if head != known.head:  # a mission's commits moved the head: the check goes on there, no read needed
        remember(runs, run.id, _moved(runs, run, view, known, head))
        return True
    kept = MadeCheck(known.id, known.node)
    if view.status == "in_progress" and known.shown.get("status") == "completed":
        # a new check shows the run working again (the newest of a name is the one shown), on the head it knows
        kept = create_check(runs.api, runs.repo, head, run.id, view)
    elif not view.shown_by(known.shown):
        update_check(runs.api, runs.repo, known.id, view)
    remember(runs, run.id, KnownCheck(kept.id, head, view.fields(), run.version, kept.node))
    return True


def _moved(runs: GitHubRuns, run: Run, view: CheckView, known: KnownCheck, head: str) -> KnownCheck:
    """The check made on the new ``head``; the one left in progress on the earlier commit marked as moved on, in
    the same request when GraphQL can name both (``app/github/check_move.py``), else by a second one."""
    left = moved_on(view, head)
    repository = runs.store.repository_id
    if known.shown.get("status") == "completed":  # a completed check says nothing wrong where it is
        made = create_check(runs.api, runs.repo, head, run.id, view)
    elif repository and known.node:
        made = move_check(runs.api, repository, head, run.id, view, known.node, left)
    else:
        made = create_check(runs.api, runs.repo, head, run.id, view)
        update_check(runs.api, runs.repo, known.id, left)
    return KnownCheck(made.id, head, view.fields(), run.version, made.node)
