"""Recovering failed deliveries (SPEC GH8): GitHub never redelivers by itself, so Interlock asks it to.

``interlock redeliver --since 1h`` lists the app's recent deliveries and asks GitHub to redeliver each one
that failed and has not since succeeded. Run it on a schedule (cron, or a scheduled workflow) to make
failures transient. https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries
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


def parse_since(text: str) -> timedelta:
    match = DURATION.match(text.strip())
    if not match:
        raise InterlockError(f"--since takes a duration such as 30m, 1h or 2d, not {text!r}")
    return timedelta(**{UNITS[match.group(2)]: int(match.group(1))})


def failed_deliveries(app: Installation, since: timedelta, now: datetime | None = None) -> list[Redelivery]:
    """Deliveries newer than ``since`` whose every attempt failed (a later OK attempt of the same guid counts)."""
    cutoff = (now or datetime.now(UTC)) - since
    attempts: dict[str, list[dict[str, Any]]] = {}
    url: str | None = "/app/hook/deliveries?per_page=100"
    for _ in range(MAX_PAGES):
        if url is None:
            break
        response = app.github.request("GET", url)
        page = response.json()
        for item in page:
            attempts.setdefault(str(item.get("guid")), []).append(item)
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
        app.call("POST", f"/app/hook/deliveries/{delivery.delivery_id}/attempts")
    return len(deliveries)


def _ok(item: dict[str, Any]) -> bool:
    code = item.get("status_code")
    return isinstance(code, int) and 200 <= code < 300


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
