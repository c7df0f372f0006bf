"""The board issue closed or reopened by a person (issue 28, part 7; SPEC W1).

Why: closing the pinned "Interlock board" issue is how a person says "no board issue here"; editing it after every
run's change (each edit a content-creating request GitHub counts, issue 16) or making a new one would overrule them.
So a close is recorded in ``board.json`` (``BoardIndex.closed``, saved with compare-and-swap like the issue's number)
and ``publish`` (``app/webhooks/board/pinned.py``) then neither edits it nor makes another; ``board.md`` on the state
branch still follows every transition. A reopen clears the mark and brings the issue up to date at once, since the
runs moved on while it was closed. Closing an issue the App opened takes triage permission, which GitHub checks.

https://docs.github.com/en/webhooks/webhook-events-and-payloads#issues
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.store.journal import BOARD_INDEX_PATH
from app.webhooks.board.commands import on_board_issue
from app.webhooks.board.pinned import edit_or_remake, parsed, render_board_issue
from app.webhooks.delivery import Delivery
from app.webhooks.router import Handler, Outcome, Router
from app.webhooks.shell import GitHubRuns


def board_events(router: Router, runs: Callable[[Delivery], GitHubRuns], otherwise: Handler) -> None:
    """The handlers of ``issues`` ``closed`` (the board issue's, else ``otherwise``: an upstream request's close,
    which counts when the App itself closes it, so the App's own closes reach it) and ``reopened``."""
    slug = router.app_slug

    @router.on("issues", "closed", own=True)
    def closed(delivery: Delivery) -> Outcome:
        return board_closed(runs(delivery), delivery, slug) if on_board_issue(delivery, slug) else otherwise(delivery)

    @router.on("issues", "reopened")
    def reopened(delivery: Delivery) -> Outcome:
        return board_reopened(runs(delivery), delivery) if on_board_issue(delivery, slug) else Outcome.IGNORED


def board_closed(runs: GitHubRuns, delivery: Delivery, app_slug: str | None) -> Outcome:
    """The board issue a person closed: left alone from now on (a close by the App itself is its own: none)."""
    if delivery.sender == f"{app_slug}[bot]":
        return Outcome.OWN
    number = delivery.require_number("issue", "number")
    stored = parsed(runs.store.write_json_cas(BOARD_INDEX_PATH, mark(number, True), "interlock: board issue closed"))
    return Outcome.HANDLED if stored.issue == number and stored.closed else Outcome.IGNORED


def board_reopened(runs: GitHubRuns, delivery: Delivery) -> Outcome:
    """The board issue a person reopened: followed again, and shown as the runs are now."""
    number = delivery.require_number("issue", "number")
    if not runs.config().board_issue:
        return Outcome.IGNORED
    stored = parsed(runs.store.write_json_cas(BOARD_INDEX_PATH, mark(number, False), "interlock: board issue reopened"))
    if stored.issue != number or stored.closed:
        return Outcome.IGNORED
    edit_or_remake(runs, number, render_board_issue(stored), f"reopened-{number}")
    return Outcome.HANDLED


def mark(number: int, closed: bool) -> Any:
    """The CAS edit that records the issue ``number`` closed (or open); an index that knows another board issue
    is left as it is, and one that knows none yet takes this one (its maker died before saving its number)."""

    def edit(value: Any) -> Any:
        index = parsed(value)
        if index.issue not in (0, number) or (index.issue == number and index.closed == closed):
            return value
        return index.model_copy(update={"issue": number, "closed": closed}).model_dump(mode="json")

    return edit
