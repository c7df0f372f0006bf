"""Recovering failed deliveries with the app's redelivery API (SPEC GH8)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.engine.errors import InterlockError
from app.github.client import GitHubApp
from app.github.redeliver import failed_deliveries, parse_since, redeliver
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def delivery(number: int, guid: str, minutes_ago: int, code: int, event: str = "issues") -> dict[str, object]:
    stamp = (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = "OK" if code < 300 else "Invalid HTTP Response: 502"
    return {
        "id": number,
        "guid": guid,
        "delivered_at": stamp,
        "redelivery": False,
        "status": status,
        "status_code": code,
        "event": event,
        "action": "labeled",
    }


def test_only_failures_not_yet_recovered_within_the_window_are_redelivered(settings: ServiceSettings) -> None:
    # SPEC GH8: GitHub never redelivers by itself
    fake = FakeGitHub()
    fake.hook_deliveries = [
        delivery(1, "a", 10, 502),  # failed: redeliver
        delivery(2, "b", 12, 500),
        delivery(3, "b", 5, 200),  # failed, then recovered
        delivery(4, "c", 30, 200),  # fine
        *[delivery(10 + i, f"ok{i}", 40, 200) for i in range(150)],  # a second page
        delivery(5, "d", 50, 503, "pull_request_review"),  # failed, still in the window, on page two
        delivery(6, "e", 180, 502),  # failed, but older than the window
    ]
    app = GitHubApp(
        replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=fake.transport()
    ).as_app()
    failed = failed_deliveries(app, timedelta(hours=1), now=NOW)
    assert [(d.guid, d.delivery_id, d.event) for d in failed] == [("d", 5, "pull_request_review"), ("a", 1, "issues")]
    assert redeliver(app, failed) == 2 and fake.redelivered == [5, 1]
    assert fake.calls("GET").count("GET /app/hook/deliveries") == 2  # paginated, stopped at the window
    assert fake.problems == []


def test_since_is_a_duration() -> None:
    assert parse_since("90m") == timedelta(minutes=90) and parse_since("2d") == timedelta(days=2)
    with pytest.raises(InterlockError, match="30m, 1h or 2d"):
        parse_since("yesterday")
