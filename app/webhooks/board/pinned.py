"""The pinned board issue kept current after every transition (issue 14, item 2; SPEC W1, W4).

The board index and ``board.md`` are saved with each transition (``app/store/board_index.py``); this module carries
what they show to the repository's "Interlock board" issue. After a new transition the issue is edited only when
what it shows for people changed between the index before and after (no read): a run started, ended or changed its
state (``for_people``) — not the step or cost of a run that works on, since each edit is a content-creating request
GitHub counts (80 a minute, 500 an hour; issue 16). A redelivery compares with the body GitHub shows (one read,
redeliveries only), since the edit may be what failed.

The issue is made once per repository. Two deliveries may both find no issue in the index they read: each claims
the making in ``board.json`` with compare-and-swap of the state branch (``GitHubStore.write_json_cas``), and only
the winner makes it. Its claim names the transition (run and version), so the redelivery of a delivery that failed
while making it claims again and first looks for the issue by label and marker; a claim older than
``CLAIM_STALE_S`` is taken over. The winner saves the issue's number with compare-and-swap again, re-rendering from
the index as stored then, so that the rows of transitions saved while it was making the issue are shown. A loser's
row is in that index, because its transition was saved before it read the winner's claim.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Protocol

from app.engine.record import Run
from app.github.client import GitHubError, Installation
from app.github.config import RepoConfig
from app.github.pinned import (
    BOARD_MARKER,
    BOARD_TITLE,
    HOW_TO_ACT,
    board_issue_body,
    create_board_issue,
    edit_board_issue,
    find_board_issue,
    pin_issue,
)
from app.store.board_index import FINISHED_KEPT, BoardIndex, minute, read_index
from app.store.github import GitHubStore
from app.store.journal import BOARD_INDEX_PATH, BOARD_PATH

CLAIM_STALE_S = 600.0  # a maker that has not saved the issue's number after this long is taken to have died
GONE = (404, 410)
log = logging.getLogger("interlock.github")


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``), which imports this module."""

    api: Installation
    repo: str
    store: GitHubStore

    def config(self) -> RepoConfig: ...


def publish(runs: GitHubRuns, run: Run, redelivered: bool) -> None:
    """The board issue brought up to date with ``run``'s saves (none: nothing to show, unless redelivered)."""
    if not runs.config().board_issue:
        return
    change = runs.store.board_changes.pop(run.id, None)
    if change is None and not redelivered:
        return
    after = change[1] if change else read_index(runs.store.boards_read.get(run.id))
    if after.closed:  # a person closed it: "no board issue" until a person reopens it (app/webhooks/board/closed.py)
        return
    if not after.issue:
        make(runs, f"{run.id}@{run.version}")
        return
    body = render_board_issue(after)
    if redelivered:
        unchanged = board_issue_body(runs.api, runs.repo, after.issue) == runs.api.shown(body)
    else:
        unchanged = change is not None and for_people(change[0]) == for_people(after)
    if not unchanged:
        edit_or_remake(runs, after.issue, body, f"{run.id}@{run.version}")


def edit_or_remake(runs: GitHubRuns, number: int, body: str, token: str) -> None:
    """Edit the issue; one a person deleted (404, 410) is forgotten by the index and made again."""
    try:
        state = edit_board_issue(runs.api, runs.repo, number, body)
    except GitHubError as exc:
        if exc.status not in GONE:
            raise
        runs.store.write_json_cas(BOARD_INDEX_PATH, forget(number), "interlock: the board issue is gone")
        make(runs, token)
        return
    if state == "closed":  # closed while its close went unseen (the service down, an upgrade): left alone from now
        runs.store.write_json_cas(BOARD_INDEX_PATH, seen_closed(number), "interlock: board issue closed")


def seen_closed(number: int) -> Any:
    """The CAS edit that records the board issue ``number`` closed, as its edit's answer said (``board_closed.py``
    records a close it is told of)."""

    def edit(value: Any) -> Any:
        index = parsed(value)
        return index.model_copy(update={"closed": True}).model_dump(mode="json") if index.issue == number else value

    return edit


def make(runs: GitHubRuns, token: str) -> None:
    """Claim the making of the board issue; the winner makes (or finds) it, pins it and saves its number."""
    stored = read_index(dump(runs.store.write_json_cas(BOARD_INDEX_PATH, claim(token), "interlock: board issue")))
    if stored.issue:  # made by another delivery meanwhile: this transition's row may be missing from it
        if not stored.closed:
            edit_or_remake(runs, stored.issue, render_board_issue(stored), token)
        return
    if stored.claim != token:
        return  # another delivery is making it; its final render reads this transition's row
    body = render_board_issue(stored)
    number, shown = find_board_issue(runs.api, runs.repo)
    problem = ""
    if not number:
        number, node = create_board_issue(runs.api, runs.repo, body)
        shown = runs.api.shown(body)
        problem = pin_issue(runs.api, node)
        if problem:
            log.warning("the board issue #%s of %s is not pinned: %s", number, runs.repo, problem)
    saved = read_index(dump(runs.store.write_json_cas(BOARD_INDEX_PATH, settle(number, problem), "interlock: board")))
    if runs.api.shown(render_board_issue(saved)) != shown:
        edit_board_issue(runs.api, runs.repo, number, render_board_issue(saved))


def claim(token: str) -> Any:
    """The CAS edit that claims the making for ``token``, unless the issue is known or someone else's claim is fresh."""

    def edit(value: Any) -> Any:
        index = parsed(value)
        if index.issue or (index.claim and index.claim != token and not stale(index.claimed_at)):
            return value
        claimed = index.model_copy(update={"claim": token, "claimed_at": datetime.now(UTC).isoformat()})
        return claimed.model_dump(mode="json")

    return edit


def settle(number: int, problem: str) -> Any:
    def edit(value: Any) -> Any:
        update = {"issue": number, "claim": "", "claimed_at": "", "pin_problem": problem}
        return parsed(value).model_copy(update=update).model_dump(mode="json")

    return edit


def forget(number: int) -> Any:
    def edit(value: Any) -> Any:
        index = parsed(value)
        return index.model_copy(update={"issue": 0}).model_dump(mode="json") if index.issue == number else value

    return edit


def parsed(value: Any) -> BoardIndex:
    """``board.json``'s value as an index, leniently (``read_index``): a view must never stop a delivery."""
    return read_index(dump(value))


def dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def stale(moment: str) -> bool:
    try:
        return (datetime.now(UTC) - datetime.fromisoformat(moment)).total_seconds() > CLAIM_STALE_S
    except (ValueError, TypeError):
        return True


def for_people(index: BoardIndex) -> list[tuple[object, ...]]:
    """What the issue shows that a person acts on: each run, its issue, team, graph, state and start."""
    return [(row.run, row.issue, row.team, row.graph, row.status, row.started) for row in index.rows]


def render_board_issue(index: BoardIndex) -> str:
    """The issue's body: every row of the index with a link to its issue, then how to act."""
    lines = [
        BOARD_MARKER,
        f"### {BOARD_TITLE}",
        "",
        f"Runs of this repository: every live run and the last {FINISHED_KEPT} that ended. Edited by Interlock when a "
        "run starts or its state changes (the step and cost are as of then; "
        f"`{BOARD_PATH}` on the state branch follows every transition); edits by hand are overwritten.",
        "",
    ]
    if index.rows:
        lines += [
            "| run | issue | team | graph | step | state | started (UTC) | cost (USD) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| `{row.run}` | {f'#{row.issue}' if row.issue else ''} | {row.team or '(default)'} | `{row.graph}` | "
            f"`{row.stage}` | {row.status} | {minute(row.started)} | {row.cost_usd:.2f} |"
            for row in index.rows
        ]
    else:
        lines.append("No runs yet.")
    return "\n".join([*lines, "", HOW_TO_ACT]) + "\n"
