"""The workers wait out a rate limit instead of failing the delivery (issue 27, SPEC GH8).

GitHub saw a 202, so a delivery recorded failed is one nobody will redeliver by themselves: neither GitHub's list
of failed deliveries nor the service's sweep names it. A full content quota (the limiter's ``ContentQuotaFull``)
and GitHub's own rate-limit answer (``RateLimited``) therefore defer it, its attempt given back; any other error
still counts against ``INTERLOCK_DELIVERY_ATTEMPTS``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.github.client import GitHubError, RateLimited
from app.github.throttle import ContentQuotaFull
from app.webhooks.deliveries.durable import QueuedDelivery, QueueState
from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue
from app.webhooks.deliveries.workers import Workers
from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome, Router

REFUSALS = {
    "quota": ContentQuotaFull(40.0),
    "secondary": RateLimited("POST", "/repos/o/r/issues/1/comments", 403, "secondary rate limit", 90.0),
    "primary": RateLimited("POST", "/repos/o/r/issues/1/comments", 403, "API rate limit exceeded", 1800.0),
    "server": GitHubError("POST", "/repos/o/r/issues/1/comments", 502, "Bad Gateway"),
}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_a_rate_limit_defers_the_delivery_and_any_other_error_counts(tmp_path: Path, refusal: str) -> None:
    # SPEC GH8: one attempt allowed, so a refusal that counted would fail the delivery at once
    router = Router()

    @router.on("issues", "labeled")
    def refused(delivery: Delivery) -> Outcome:
        raise REFUSALS[refusal]

    queue = SqliteDeliveryQueue(tmp_path / "queue.sqlite3")
    ends: list[str] = []
    workers = Workers(queue, router, count=1, attempts=1, visibility_s=30, on_end=ends.append)
    body = json.dumps({"action": "labeled", "repository": {"full_name": "o/r"}}).encode()
    queue.put(QueuedDelivery("d-1", "issues", "o/r", body))
    workers.notify()
    give_up = time.monotonic() + 20
    while not ends:
        assert time.monotonic() < give_up, "the worker never ended the delivery"
        time.sleep(0.01)
    workers.stop()
    record = queue.record("d-1")
    assert record is not None
    if refusal == "server":
        assert ends == ["failed"] and record.state is QueueState.FAILED
    else:
        assert ends == ["deferred"] and (record.state, record.attempts) == (QueueState.WAITING, 0)
        assert queue.take("w", 30) is None  # not before the wait GitHub or the quota asked for
