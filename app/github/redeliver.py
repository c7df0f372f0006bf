"""Recovering failed deliveries (SPEC GH8): GitHub never redelivers by itself, so Interlock asks it to.

``interlock redeliver --since 1h`` lists the app's recent deliveries and asks GitHub to redeliver each one
that failed and has not since succeeded; the service's periodic sweep (app/webhooks/deliveries/sweep.py) does the same
from this one listing, on its own. https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries

What GitHub decides, and this module follows:
- the listing (``GET /app/hook/deliveries``) is newest first, at most 100 a page (``per_page``), paged by a
  cursor that only the ``Link`` header's ``rel="next"`` names; GitHub keeps about 3 days of deliveries.
  https://docs.github.com/rest/apps/webhooks#list-deliveries-for-an-app-webhook
- every attempt is an item of its own (a redelivery has ``redelivery: true``) sharing the event's ``guid``,
  which is the ``X-GitHub-Delivery`` header the service received; an attempt failed when its ``status_code``
  is 400 or more, or its ``status`` is not ``OK`` (a timeout, or no connection at all: ``status_code`` 0).
- ``POST /app/hook/deliveries/{delivery_id}/attempts`` asks for one more attempt and answers 202 Accepted.
  https://docs.github.com/rest/apps/webhooks#redeliver-a-delivery-for-an-app-webhook
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.engine.errors import InterlockError
from app.github.client import Installation

MAX_PAGES = 50
DURATION = re.compile(r"^(\d+)([smhd])$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


@dataclass(frozen=True)
class Redelivery:
    delivery_id: int
    guid: str
    event: str
    delivered_at: str
    status: str


class ListingMalformed(InterlockError):
    """GitHub's listing answered something that is not a list of deliveries: nothing is redelivered."""


def parse_duration(text: str) -> timedelta | None:
    """``30m``, ``6h``, ``2d`` as a timedelta; None when ``text`` is not such a duration."""
    match = DURATION.match(text.strip())
    return timedelta(**{UNITS[match.group(2)]: int(match.group(1))}) if match else None


def parse_since(text: str) -> timedelta:
    window = parse_duration(text)
    if window is None:
        raise InterlockError(f"--since takes a duration such as 30m, 1h or 2d, not {text!r}")
    return window


def failed_deliveries(app: Installation, since: timedelta, now: datetime | None = None) -> list[Redelivery]:
    """Deliveries newer than ``since`` whose every attempt failed (a later OK attempt of the same guid counts),
    oldest first; each names its first attempt, the one to ask GitHub to attempt again."""
    cutoff = (now or datetime.now(UTC)) - since
    attempts: dict[str, list[dict[str, Any]]] = {}
    url: str | None = "/app/hook/deliveries?per_page=100"
    for _ in range(MAX_PAGES):
        if url is None:
            break
        response = app.github.request("GET", url)
        page = _page(response)
        for item in page:
            attempts.setdefault(str(item["guid"]), []).append(item)
        oldest = min((str(item.get("delivered_at", "")) for item in page), default="")
        url = _next_link(response.headers.get("link", "")) if page and _after(oldest, cutoff) else None
    found = []
    for guid, items in attempts.items():
        if any(_ok(item) for item in items):
            continue
        first = min(items, key=lambda item: str(item.get("delivered_at", "")))
        if _after(str(first.get("delivered_at", "")), cutoff):
            found.append(
                Redelivery(
                    int(first["id"]),
                    guid,
                    str(first.get("event", "")),
                    str(first.get("delivered_at", "")),
                    str(first.get("status", "")),
                )
            )
    return sorted(found, key=lambda r: r.delivered_at)


def redeliver(app: Installation, deliveries: list[Redelivery]) -> int:
    for delivery in deliveries:
        redeliver_one(app, delivery)
    return len(deliveries)


def redeliver_one(app: Installation, delivery: Redelivery) -> None:
    """One more attempt of ``delivery`` (GitHub answers 202); a refusal raises ``GitHubError``."""
    app.call("POST", f"/app/hook/deliveries/{delivery.delivery_id}/attempts")


def _page(response: Any) -> list[dict[str, Any]]:
    """A page's deliveries; an item without an integer ``id`` or a ``guid`` cannot be redelivered: skipped."""
    try:
        page = response.json()
    except ValueError:
        raise ListingMalformed("GitHub's delivery listing is not JSON") from None
    if not isinstance(page, list):
        raise ListingMalformed(f"GitHub's delivery listing is a {type(page).__name__}, not a list")
    return [
        item
        for item in page
        if isinstance(item, dict) and isinstance(item.get("id"), int) and isinstance(item.get("guid"), str)
    ]


def _ok(item: dict[str, Any]) -> bool:
    code = item.get("status_code")
    return isinstance(code, int) and 0 < code < 400 and item.get("status") == "OK"


def _after(stamp: str, cutoff: datetime) -> bool:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) >= cutoff
    except ValueError:
        return False


def _next_link(header: str) -> str | None:
    for part in header.split(","):
        if 'rel="next"' in part:
            return part.split(";")[0].strip().strip("<>")
    return None
