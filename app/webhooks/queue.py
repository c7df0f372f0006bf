"""A team's queue on GitHub (SPEC U5): a team runs at most ``concurrency`` live runs at once; a further trigger
waits in ``queues/<team>.json`` on the state branch, in order, and starts when a run of the team ends.

The file is changed like a run record, with compare-and-swap (``change_json`` of ``app/store/github.py``): re-read
and re-applied when another writer (another delivery, another service replica) moved the state branch first.
``running`` lists the issues holding a place among the running; an issue whose latest run has ended, or that never
got one (its start failed), gives its place back the next time the file is read, so a crash loses no slot. A
waiting trigger leaves the queue only once its run has started: a failed start keeps it at the head.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from app.github.teams import TeamSettings
from app.store.github import change_json
from app.webhooks.issue_runs import issue_runs
from app.webhooks.shell import GitHubRuns


class Waiting(BaseModel):
    """A queued trigger: the delivery that queued it, kept so that its start is that label's start."""

    issue: int
    delivery: str
    payload: dict[str, Any]
    told: int = 0  # the place the issue was last told


class TeamQueue(BaseModel):
    running: list[int] = Field(default_factory=list)
    waiting: list[Waiting] = Field(default_factory=list)

    def place(self, issue: int) -> int | None:
        return next((n for n, entry in enumerate(self.waiting, 1) if entry.issue == issue), None)


def queue_path(team: TeamSettings) -> str:
    return f"queues/{team.name}.json"


def change(runs: GitHubRuns, team: TeamSettings, edit: Callable[[TeamQueue], TeamQueue]) -> TeamQueue:
    """``edit`` applied to the queue with compare-and-swap; the queue as saved (or as read, when unchanged)."""
    return change_json(runs.api, runs.repo, queue_path(team), TeamQueue, edit, f"interlock: queue of team {team.name}")


def still_running(runs: GitHubRuns, issue: int) -> bool:
    found = issue_runs(runs, issue)
    return bool(found) and runs.is_live(found[-1])


def admit(runs: GitHubRuns, team: TeamSettings, issue: int, entry: Waiting) -> tuple[int | None, bool]:
    """``None``: the issue takes a running place now (a free place, and no one waiting before it); else its place
    in the queue, where it is added once (a redelivery or a second label does not queue it twice), and whether
    this call added it."""
    assert team.concurrency is not None
    limit, added = team.concurrency, [False]

    def edit(queue: TeamQueue) -> TeamQueue:
        added[0] = False
        queue.running = [n for n in queue.running if n != issue and still_running(runs, n)]
        first = queue.waiting[0].issue if queue.waiting else issue
        if len(queue.running) < limit and first == issue:
            queue.running.append(issue)
        elif queue.place(issue) is None:
            queue.waiting.append(entry.model_copy(update={"told": len(queue.waiting) + 1}))
            added[0] = True
        return queue

    saved = change(runs, team, edit)
    return (None, False) if issue in saved.running else (saved.place(issue), added[0])


def started(runs: GitHubRuns, team: TeamSettings, issue: int) -> None:
    """The issue's run started: it leaves the waiting line."""

    def edit(queue: TeamQueue) -> TeamQueue:
        queue.waiting = [entry for entry in queue.waiting if entry.issue != issue]
        return queue

    change(runs, team, edit)


def leave(runs: GitHubRuns, team: TeamSettings, issue: int) -> bool:
    """An issue unlabelled or closed while waiting leaves the queue; whether it was waiting."""
    before = change(runs, team, lambda queue: queue)
    if before.place(issue) is None:
        return False
    started(runs, team, issue)
    return True


def head_to_start(runs: GitHubRuns, team: TeamSettings) -> Waiting | None:
    """The first waiting trigger when a running place is free (ended runs give theirs back), else ``None``."""
    assert team.concurrency is not None
    limit = team.concurrency

    def edit(queue: TeamQueue) -> TeamQueue:
        queue.running = [n for n in queue.running if still_running(runs, n)]
        return queue

    queue = change(runs, team, edit)
    return queue.waiting[0] if queue.waiting and len(queue.running) < limit else None


def tell_places(runs: GitHubRuns, team: TeamSettings) -> None:
    """Each waiting issue whose place changed is told its new one, once."""

    def edit(queue: TeamQueue) -> TeamQueue:
        for place, entry in enumerate(queue.waiting, 1):
            if entry.told != place:
                runs.api.comment(runs.repo, entry.issue, waiting_text(team, place))
                entry.told = place
        return queue

    change(runs, team, edit)


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
