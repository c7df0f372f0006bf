"""A team's queue on GitHub (SPEC U5): a team runs at most ``concurrency`` live runs at once; a further trigger
waits in ``queues/<team>.json`` on the state branch, in order, and starts when a run of the team ends.

The file is changed with compare-and-swap (``GitHubStore.write_json_cas``): a commit on the head that was read and
a fast-forward-only update of the branch, re-read and re-applied when another writer (another delivery, another
service replica) moved it first. A message is posted only after the write that decided it won, so a replica
that lost the race posts nothing, and the file keeps what each issue was told, so a redelivery posts it never
again; a queued issue's first note is recorded as told only once it was posted, so a redelivery posts a note
that failed. ``running`` lists the issues holding a place among the running: a run holds its place until it ends
(done or cancelled); a failed, stopped or escalated run can be resumed, so it keeps its place. An issue whose
latest run has ended, or that never got one (its start failed), gives its place back the next time the file is
read, so a crash loses no slot. A waiting trigger leaves the queue only once its run has started: a failed start
keeps it at the head. A file that cannot be read is left as it is: the delivery is refused (422, redeliver it
once the file is fixed) and the issue concerned is told which file and how to fix it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from app.github.config import ConfigInvalid
from app.github.teams import TeamSettings
from app.store.github import StateFileUnreadable
from app.store.journal import STATE_BRANCH
from app.webhooks.issue_runs import issue_runs
from app.webhooks.shell import GitHubRuns

QUEUED_LABEL = "interlock:queued"  # on an issue while it waits in its team's queue
log = logging.getLogger("interlock.webhooks")


class QueueUnreadable(ConfigInvalid):
    """A team's queue file is not what Interlock writes: refused like a bad configuration (422, nothing changed,
    redelivered once a person fixed it), not a failure of GitHub (5xx)."""


class Waiting(BaseModel):
    """A queued trigger: the delivery that queued it, kept so that its start is that label's start."""

    issue: int
    delivery: str
    payload: dict[str, Any]
    told: int = 0  # the place the issue was last told; 0 until its first note was posted


class TeamQueue(BaseModel):
    running: list[int] = Field(default_factory=list)
    waiting: list[Waiting] = Field(default_factory=list)

    def place(self, issue: int) -> int | None:
        return next((n for n, entry in enumerate(self.waiting, 1) if entry.issue == issue), None)


def queue_path(team: TeamSettings) -> str:
    return f"queues/{team.name}.json"


def change(
    runs: GitHubRuns, team: TeamSettings, edit: Callable[[TeamQueue], TeamQueue], about: int | None = None
) -> tuple[TeamQueue, TeamQueue]:
    """``edit`` applied to the queue with compare-and-swap: the queue as read by the attempt that won, and as
    saved (or as read, when unchanged). An unreadable file refuses the delivery, ``about`` (the issue whose event
    it is) told why."""
    message = f"interlock: queue of team {team.name}"
    try:
        return runs.store.change_model(queue_path(team), TeamQueue, edit, message, "a queue")
    except StateFileUnreadable as exc:
        raise _refused(runs, team, exc, about) from None


def _refused(runs: GitHubRuns, team: TeamSettings, exc: StateFileUnreadable, about: int | None) -> QueueUnreadable:
    """The log line and the issue's comment (once per state commit) for a queue file that cannot be read."""
    text = unreadable_text(runs.repo, team, exc)
    log.warning("queue of team %s in %s: %s", team.name, runs.repo, exc)
    if about is not None:
        mark = f"<!-- interlock:queue-unreadable path={exc.path} head={exc.head} -->"
        runs.api.comment_once(runs.repo, about, text, mark)
    return QueueUnreadable(text)


def unreadable_text(repo: str, team: TeamSettings, exc: StateFileUnreadable) -> str:
    return (
        f"Interlock cannot read the queue of team `{team.name}`: `{exc.path}` on the `{STATE_BRANCH}` branch of "
        f"{repo} is {exc.reason}. Nothing was "
        "changed, and the file is left as it is. To fix it, restore the file from the branch's history "
        f"(`git log {STATE_BRANCH} -- {exc.path}`) or correct it by hand: "
        '`{"running": [issue numbers], "waiting": [{"issue": N, "delivery": "...", "payload": {...}, "told": N}]}`'
        "; then redeliver the failed delivery (`interlock redeliver`)."
    )


def still_running(runs: GitHubRuns, issue: int) -> bool:
    found = issue_runs(runs, issue)
    return bool(found) and runs.is_live(found[-1])


def admit(
    runs: GitHubRuns, team: TeamSettings, issue: int, entry: Waiting, words: Callable[[int], str] | None = None
) -> int | None:
    """``None``: the issue takes a running place now (a free place, and no one waiting before it); else its place
    in the queue, where it is added once (a redelivery or a second label does not queue it twice). An issue
    this call added is told its place (``words``, by default the queue's own) and labelled ``interlock:queued``,
    after the write that added it won."""
    assert team.concurrency is not None
    limit = team.concurrency

    def edit(queue: TeamQueue) -> TeamQueue:
        queue.running = [n for n in queue.running if n != issue and still_running(runs, n)]
        first = queue.waiting[0].issue if queue.waiting else issue
        if len(queue.running) < limit and first == issue:
            queue.running.append(issue)
        elif queue.place(issue) is None:
            queue.waiting.append(entry.model_copy(update={"told": 0}))
        return queue

    _, saved = change(runs, team, edit, about=issue)
    place = None if issue in saved.running else saved.place(issue)
    if place is not None and saved.waiting[place - 1].told == 0:  # added now, or its note failed before
        runs.api.comment(runs.repo, issue, words(place) if words else waiting_text(team, place))
        runs.api.add_labels(runs.repo, issue, [QUEUED_LABEL])
        _told(runs, team, issue, place)
    return place


def _told(runs: GitHubRuns, team: TeamSettings, issue: int, place: int) -> None:
    """The place posted is recorded in a second write, after the comment: a note that failed (a GitHub error,
    a crash) leaves ``told`` at 0, and the redelivery posts it (SPEC U5, GH8)."""

    def edit(queue: TeamQueue) -> TeamQueue:
        for entry in queue.waiting:
            if entry.issue == issue and entry.told == 0:
                entry.told = place
        return queue

    change(runs, team, edit, about=issue)


def started(runs: GitHubRuns, team: TeamSettings, issue: int) -> None:
    """The issue's run started: it leaves the waiting line, and loses its ``interlock:queued`` label."""

    def edit(queue: TeamQueue) -> TeamQueue:
        queue.waiting = [entry for entry in queue.waiting if entry.issue != issue]
        return queue

    read, _ = change(runs, team, edit, about=issue)
    if read.place(issue) is not None:
        runs.api.remove_label(runs.repo, issue, QUEUED_LABEL)


def leave_other_queues(runs: GitHubRuns, team: TeamSettings, issue: int) -> None:
    """An issue that started in ``team`` leaves the line of every other team (a person relabelled it while it
    waited): left there, it would come first and be refused, its run being live (SPEC U5, GH1)."""
    for other in runs.teams():
        if other.name != team.name and other.concurrency is not None and leave(runs, other, issue):
            tell_places(runs, other, issue)


def leave(runs: GitHubRuns, team: TeamSettings, issue: int) -> bool:
    """An issue unlabelled or closed while waiting leaves the queue; whether it was waiting."""
    before, _ = change(runs, team, lambda queue: queue, about=issue)
    if before.place(issue) is None:
        return False
    started(runs, team, issue)
    return True


def head_to_start(runs: GitHubRuns, team: TeamSettings, about: int | None = None) -> Waiting | None:
    """The first waiting trigger when a running place is free (ended runs give theirs back), else ``None``.
    A run that failed, stopped or escalated is still live (it can be resumed): it keeps its place (SPEC U5)."""
    assert team.concurrency is not None
    limit = team.concurrency

    def edit(queue: TeamQueue) -> TeamQueue:
        queue.running = [n for n in queue.running if still_running(runs, n)]
        return queue

    _, queue = change(runs, team, edit, about)
    return queue.waiting[0] if queue.waiting and len(queue.running) < limit else None


def tell_places(runs: GitHubRuns, team: TeamSettings, about: int | None = None) -> None:
    """Each waiting issue whose place changed is told its new one, once: the file records the place told, and
    the comments are posted only after that write won, so a replica that lost the race, or a redelivery,
    posts none."""

    def edit(queue: TeamQueue) -> TeamQueue:
        for place, entry in enumerate(queue.waiting, 1):
            entry.told = place
        return queue

    read, saved = change(runs, team, edit, about)
    told = {entry.issue: entry.told for entry in read.waiting}
    for place, entry in enumerate(saved.waiting, 1):
        if told.get(entry.issue) != place:
            runs.api.comment(runs.repo, entry.issue, waiting_text(team, place))


def waiting_text(team: TeamSettings, place: int) -> str:
    return (
        f"Interlock queued this issue: team `{team.name}` runs at most {team.concurrency} run(s) at once. "
        f"Place in the queue: **{place}**. It starts by itself when a run of the team ends; remove the label or "
        "close the issue to leave the queue."
    )


def queued_payload(payload: dict[str, Any], masked: Callable[[str], str]) -> dict[str, Any]:
    """What a queued trigger keeps of its delivery: what the start reads, the person's text masked."""
    issue = payload.get("issue") or {}
    return {
        "action": "labeled",
        "label": payload.get("label"),
        "installation": payload.get("installation"),
        "repository": {key: (payload.get("repository") or {}).get(key) for key in ("full_name", "default_branch")},
        "sender": {"login": (payload.get("sender") or {}).get("login")},
        "issue": {
            "number": issue.get("number"),
            "title": masked(str(issue.get("title") or "")),
            "body": masked(str(issue.get("body") or "")),
            "labels": [{"name": label.get("name")} for label in issue.get("labels") or [] if isinstance(label, dict)],
            "updated_at": issue.get("updated_at"),
        },
    }
