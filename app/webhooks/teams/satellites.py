"""Satellite repositories on GitHub (SPEC U7): the run branches, the pull requests, and the end of the run.

At the start each satellite of the run's team gets a run branch ``interlock/<run-id>`` from its default branch
(the job pushes the agent's work there: ``app/runner/satellites.py``). Where the run's pull request opens, each
satellite whose run branch holds work gets one too (a satellite without work has nothing to merge and no pull
request), and every body then links the others. The run is ``done`` only when the main pull request and every
satellite's are merged: a merge that leaves another open is remembered in the run's links (``landed:<repo>``)
and the last one ends the run. ``/interlock deliver owner/name[,owner/name]`` (a writer) marks satellites
delivered without their merge. The App must be installed on each satellite; one in another account is reached
through that account's installation (``app/github/installations.py``). The close of a satellite's pull request
arrives as that repository's event, carrying the marker of the run it belongs to, and counts only when the run
itself names that pull request (like GH9).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Protocol, TypeVar

from app.engine import events as ev
from app.engine.errors import EventRejected, InterlockError
from app.engine.record import Run
from app.github.client import GitHubApp, GitHubError, Installation
from app.github.installations import installation_for
from app.runner.driver import Applied
from app.webhooks.delivery import Delivery, number_at, text_at
from app.webhooks.router import Outcome

MARKER = "<!-- interlock:satellite run={run_id} repo={repo} -->"
MARKED = re.compile(r"<!-- interlock:satellite run=(?P<run>[\w.-]+) repo=(?P<repo>[\w.-]+/[\w.-]+) -->")
PULL = "pr:{repo}"  # a satellite's pull request number, or UNOPENED
PULL_NODE = "pr_node:{repo}"
LANDED = "landed:{repo}"  # "merged by …" or "delivered by …": that repository's part is in
UNOPENED = "unopened"  # work there, but no pull request could be opened: a person delivers it


class GitHubRuns(Protocol):
    """What this module needs of a repository's runs (``app/webhooks/shell.py``, which imports this module)."""

    api: Installation
    repo: str

    def api_of(self, repo: str) -> Installation: ...

    def record(self, run_id: str, make: Callable[[Run], ev.Event]) -> Applied: ...


R = TypeVar("R", bound=GitHubRuns)


class SatelliteUnreadable(InterlockError):
    """A satellite the App cannot read: the start is refused before anything is made, the issue told why."""


class DeliverError(EventRejected):
    """``/interlock deliver REPOS`` naming a repository that is no satellite of the run."""


def make_branches(api_of: Callable[[str], Installation], satellites: list[str], branch: str) -> None:
    """Each satellite's run branch, at its default branch's head; one that exists already is kept (a redelivered
    start). A satellite the App cannot read refuses the start before anything is made, as a missing base does.
    Each is reached through its own account's installation (``api_of``): a satellite may be another's."""
    heads: dict[str, str] = {}
    for repo in satellites:
        found = api_of(repo).repository(repo)
        head = api_of(repo).ref(repo, str(found.get("default_branch") or "main")) if found else None
        if head is None:
            raise SatelliteUnreadable(
                f"the satellite repository `{repo}` cannot be read: install the App on it, or remove it from the "
                "team's `satellites`"
            )
        heads[repo] = head
    for repo, head in heads.items():
        if api_of(repo).ref(repo, branch) is None:
            api_of(repo).create_ref(repo, branch, head)


def open_pulls(runs: GitHubRuns, run: Run, draft: bool) -> Run:
    """A pull request in every satellite with work on its run branch, each linked to the others; when the run's
    own pull request is made ready (``draft`` false), the satellites' are too."""
    made: dict[str, str] = {}
    for repo in run.satellites:
        number = run.links.get(PULL.format(repo=repo))
        if number is None:
            made.update(_open_one(runs, run, repo, draft))
        elif not draft and number != UNOPENED:
            runs.api_of(repo).mark_ready(run.links[PULL_NODE.format(repo=repo)])
    if not made:
        return run
    run = runs.record(
        run.id, lambda r: ev.Linked(key=f"{r.id}/satellite-pulls/{len(r.links)}", at=r.updated_at, links=made)
    ).run
    _link_bodies(runs, run)
    return run


def unlinked(run: Run) -> list[str]:
    """The satellites the run names no pull request of: without work yet, or one whose answer was lost."""
    return [repo for repo in run.satellites if PULL.format(repo=repo) not in run.links]


def _open_one(runs: GitHubRuns, run: Run, repo: str, draft: bool) -> dict[str, str]:
    """The links of ``repo``'s new pull request; none when its run branch holds no work (GitHub's 422)."""
    found = runs.api_of(repo).repository(repo) or {}
    base = str(found.get("default_branch") or "main")
    title = f"{run.request.title} (Interlock run {run.id}, part of {runs.repo})"
    try:
        pull = runs.api_of(repo).create_pull(repo, run.branch, base, title, _body(runs, run, repo), draft)
    except GitHubError as exc:
        if exc.status == 422:
            return {}
        issue = int(run.links.get("issue", "0"))
        if issue:
            runs.api.comment(
                runs.repo,
                issue,
                f"Could not open the pull request in `{repo}` ({exc.status}): open it "
                f"by hand and merge it, or say `/interlock deliver {repo}`.",
            )
        return {PULL.format(repo=repo): UNOPENED}
    return {PULL.format(repo=repo): str(pull["number"]), PULL_NODE.format(repo=repo): pull["node_id"]}


def _body(runs: GitHubRuns, run: Run, repo: str | None) -> str:
    """A pull request's body: what it is part of, every other pull request of the run, and (in a satellite's)
    the marker that ties its close to the run."""
    issue = run.links.get("issue", "?")
    if repo is None:
        text = f"Run `{run.id}` for #{issue}. Merging is a person's decision."
    else:
        text = f"Part of Interlock run `{run.id}` for {runs.repo}#{issue}. Merging is a person's decision."
    others = [f"- {name}#{number}" for name, number in pulls_of(runs, run).items() if name != (repo or runs.repo)]
    listed = "\n\nThe run is done when all its pull requests are merged:\n" + "\n".join(others) if others else ""
    marker = f"\n\n{MARKER.format(run_id=run.id, repo=runs.repo)}" if repo else ""
    return f"{text}{listed}{marker}"


def pulls_of(runs: GitHubRuns, run: Run) -> dict[str, str]:
    """Every pull request of the run that exists, by repository: the main one first."""
    found = {runs.repo: run.links["pr"]} if "pr" in run.links else {}
    for repo in run.satellites:
        number = run.links.get(PULL.format(repo=repo))
        if number is not None and number != UNOPENED:
            found[repo] = number
    return found


def _link_bodies(runs: GitHubRuns, run: Run) -> None:
    for repo, number in pulls_of(runs, run).items():
        runs.api_of(repo).edit_pull(repo, int(number), _body(runs, run, None if repo == runs.repo else repo))


def main_repo(run: Run) -> str:
    """The run's own repository, from its origin (``owner/name#issue``)."""
    return run.request.origin.partition("#")[0]


def outstanding(run: Run) -> list[str]:
    """The repositories whose part has not landed yet: the main one, and every satellite with a pull request."""
    main = main_repo(run)
    waiting = [main] if LANDED.format(repo=main) not in run.links else []
    for repo in run.satellites:
        if PULL.format(repo=repo) in run.links and LANDED.format(repo=repo) not in run.links:
            waiting.append(repo)
    return waiting


def landed(run: Run, repo: str, event: ev.Merged) -> ev.Event:
    """``repo``'s pull request is merged: the run is merged (done) when nothing else is outstanding, else it
    remembers and waits for the rest (SPEC U7)."""
    if not run.satellites or not [name for name in outstanding(run) if name != repo]:
        return event
    how = f"merged by {event.by or 'a person'}"
    return ev.Linked(key=event.key, at=event.at, by=event.by, links={LANDED.format(repo=repo): how})


def pull_closed(run: Run, event: ev.Merged | ev.Closed) -> ev.Event:
    """The main pull request's close: closed unmerged cancels the run; merged ends it or waits for its satellites."""
    return landed(run, main_repo(run), event) if isinstance(event, ev.Merged) else event


def deliver(words: list[str], key: str, moment: datetime, by: str) -> Callable[[Run], ev.Event]:
    """``/interlock deliver owner/name[,owner/name]``: those satellites' parts count as landed without a merge;
    when that leaves nothing outstanding, the run is done."""
    named = list(dict.fromkeys(name for word in words for name in word.split(",") if name))

    def make(run: Run) -> ev.Event:
        unknown = [name for name in named if name not in run.satellites]
        if unknown:
            known = ", ".join(f"`{name}`" for name in run.satellites) or "none"
            why = f"`{', '.join(unknown)}` is no satellite of this run (its satellites: {known})"
            raise DeliverError(run.id, run.status.value, "deliver", why)
        if not [name for name in outstanding(run) if name not in named]:
            return ev.Merged(key=key, at=moment, by=by)
        links = {LANDED.format(repo=name): f"delivered by {by or 'a person'}" for name in named}
        return ev.Linked(key=key, at=moment, by=by, links=links)

    return make


def satellite_closed(
    app: GitHubApp,
    delivery: Delivery,
    closed: ev.Merged | ev.Closed,
    open_runs: Callable[[int, str, str], R],  # installation, repository, its default branch
    apply: Callable[[R, str, Callable[[Run], ev.Event]], Outcome],
) -> Outcome | None:
    """A satellite pull request's close, applied to its run in the main repository; ``None`` when the pull
    request is no satellite's (the main repository's own, or unmarked). Only a merge counts: a satellite closed
    unmerged leaves the run waiting, for a person to merge another or deliver it."""
    marked = MARKED.search(text_at(delivery.payload, "pull_request", "body") or "")
    repo, installation = delivery.repository, delivery.installation_id
    if marked is None or repo is None or installation is None or marked.group("repo") == repo:
        return None
    main = marked.group("repo")
    installation = installation_for(app, main, repo, installation)  # the main repository may be another account's
    found = app.installation(installation).repository(main) or {}
    runs = open_runs(installation, main, str(found.get("default_branch") or "main"))
    number = str(number_at(delivery.payload, "pull_request", "number"))

    def make(run: Run) -> ev.Event:
        if run.links.get(PULL.format(repo=repo)) != number or not isinstance(closed, ev.Merged):
            raise _NotOurs(run.id)
        return landed(run, repo, closed)

    try:
        return apply(runs, marked.group("run"), make)
    except _NotOurs:
        return Outcome.IGNORED


class _NotOurs(InterlockError):
    """The close of a pull request the run does not name (a copied marker), or one closed without merge."""
