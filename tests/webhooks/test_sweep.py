"""The service's periodic sweep of failed deliveries (SPEC GH8): against the stand-in GitHub, a real SQLite
delivery queue, and a real redis-server for two replicas."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from app.github.client import GitHubApp
from app.webhooks.deliveries.durable import QueuedDelivery
from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue
from app.webhooks.deliveries.sweep import Sweeper
from app.webhooks.deliveries.sweep_lock import PREFIX, Claim, ProcessLedger, ProcessLock, RedisLedger, redis_pieces
from app.webhooks.deliveries.sweep_settings import SweepSettings
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub
from tests.github.openapi import unknown_query
from tests.redis_server import redis_url  # noqa: F401  (a fixture)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
API = "http://github.test/api/v3"
SIX_HOURS = SweepSettings(interval_s=300, lookback=timedelta(hours=6), max_per_hour=100)


def attempt(number: int, guid: str, minutes_ago: float, code: int, *, status: str = "", again: bool = False) -> Any:
    stamp = (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": number,
        "guid": guid,
        "delivered_at": stamp,
        "redelivery": again,
        "status": status or ("OK" if code < 400 else f"Invalid HTTP Response: {code}"),
        "status_code": code,
        "event": "issues",
        "action": "labeled",
    }


class Clock:
    """Epoch seconds for the sweeper and the ledger, monotonic ones for the lock: moved by hand."""

    def __init__(self) -> None:
        self.now = NOW.timestamp()

    def __call__(self) -> float:
        return self.now


def github(fake: FakeGitHub, settings: ServiceSettings, wrap: Callable[[httpx.Request], Any] | None = None) -> Any:
    inner = fake.transport()
    if wrap is None:
        transport: httpx.BaseTransport = inner
    else:
        transport = httpx.MockTransport(lambda request: wrap(request) or inner.handle_request(request))
    return GitHubApp(replace(settings, api_url=API).app_identity(), transport=transport)


def sweeper(
    fake: FakeGitHub,
    settings: ServiceSettings,
    queue: SqliteDeliveryQueue,
    clock: Clock,
    sweep: SweepSettings = SIX_HOURS,
    wrap: Callable[[httpx.Request], Any] | None = None,
) -> Sweeper:
    app = github(fake, settings, wrap).as_app()
    return Sweeper(app, queue, sweep, lock=ProcessLock(clock), ledger=ProcessLedger(), clock=clock)


@pytest.fixture
def queue(tmp_path: Path) -> SqliteDeliveryQueue:
    return SqliteDeliveryQueue(tmp_path / "queue.sqlite3")


def queued(queue: SqliteDeliveryQueue, guid: str, *, apply: bool) -> None:
    queue.put(QueuedDelivery(guid, "issues", "octo/app", b"{}"))
    if apply:
        item = queue.take("test", 60)
        assert item is not None and item.delivery_id == guid
        queue.done(guid, "handled")


def test_only_failed_deliveries_the_service_lacks_within_the_lookback_are_redelivered(
    settings: ServiceSettings, queue: SqliteDeliveryQueue
) -> None:
    # SPEC GH8: a periodic sweep of the App's delivery log redelivers what failed, with no person needed
    fake = FakeGitHub()
    fake.hook_deliveries = [  # newest first, as GitHub lists them
        attempt(9, "b", 4, 200, again=True),  # "b" failed, then GitHub's redelivery succeeded: nothing to do
        attempt(1, "a", 10, 502),  # failed: redeliver
        attempt(2, "b", 12, 500),
        attempt(3, "c", 30, 200),  # fine
        attempt(4, "applied", 31, 0, status="timed out"),  # GitHub gave up waiting, yet the queue applied it
        attempt(5, "waiting", 32, 503),  # the queue has it waiting
        attempt(6, "lost", 33, 0, status="Couldn't connect to server"),  # never reached the service
        *[attempt(100 + i, f"ok{i}", 40, 202) for i in range(150)],  # fills page one: the rest is on page two
        attempt(7, "d", 300, 500),  # failed, within six hours, on page two
        *[attempt(300 + i, f"older{i}", 400, 202) for i in range(60)],
        attempt(8, "old", 400, 500),  # failed, older than the lookback
        *[attempt(400 + i, f"oldest{i}", 500, 202) for i in range(100)],  # page three: never read
    ]
    queued(queue, "applied", apply=True)
    queued(queue, "waiting", apply=False)
    report = sweeper(fake, settings, queue, Clock()).sweep()
    assert report is not None
    assert fake.redelivered == [7, 6, 1]  # oldest first; each by its first attempt's id
    assert report.swept == ["d", "lost", "a"] and sorted(report.held) == ["applied", "waiting"]
    listings = [r for r in fake.requests if r.method == "GET"]
    assert [dict(r.url.params) for r in listings] == [{"per_page": "100"}, {"per_page": "100", "cursor": "100"}]
    # each request is GitHub's, with the App's JWT (the listing and the redelivery want one, not a token)
    assert fake.problems == [] and all(unknown_query(r, fake.base) == [] for r in fake.requests)
    assert all(r.headers["authorization"].startswith("Bearer ey") for r in fake.requests)
    assert all(r.headers["authorization"].count(".") == 2 for r in fake.requests)


def test_the_hourly_bound_holds_and_each_delivery_is_asked_for_once_a_lookback(
    settings: ServiceSettings, queue: SqliteDeliveryQueue
) -> None:
    # SPEC GH8: a long outage does not come back as a flood; one that failed again is not asked for at every sweep
    fake = FakeGitHub()
    fake.hook_deliveries = [attempt(n, f"g{n}", 60 - n, 502) for n in range(1, 6)]
    clock = Clock()
    sweep = sweeper(fake, settings, queue, clock, replace(SIX_HOURS, max_per_hour=2))
    first = sweep.sweep()
    assert first is not None and first.swept == ["g1", "g2"] and first.over_bound == ["g3", "g4", "g5"]
    clock.now += 300  # the next interval, within the hour
    second = sweep.sweep()
    assert second is not None and second.swept == [] and second.asked_before == ["g1", "g2"]
    assert second.over_bound == ["g3", "g4", "g5"] and fake.redelivered == [1, 2]
    clock.now += 3600  # an hour after the first asks
    third = sweep.sweep()
    assert third is not None and third.swept == ["g3", "g4"] and fake.redelivered == [1, 2, 3, 4]
    assert third.asked_before == ["g1", "g2"]  # still within the six hours: asked for once


def test_one_sweep_per_interval_and_an_ask_github_refused_is_asked_again(
    settings: ServiceSettings, queue: SqliteDeliveryQueue
) -> None:
    # SPEC GH8: nothing lost: a refused ask is not remembered as made
    fake = FakeGitHub()
    fake.hook_deliveries = [attempt(1, "a", 5, 502)]
    fake.fail("POST", "/app/hook/deliveries/1/attempts", 422)
    clock = Clock()
    sweep = sweeper(fake, settings, queue, clock)
    first = sweep.sweep()
    assert first is not None and first.refused == ["a"] and fake.redelivered == []
    assert sweep.sweep() is None  # the lock holds for the interval: no second sweep meanwhile
    clock.now += SIX_HOURS.interval_s
    again = sweep.sweep()
    assert again is not None and again.swept == ["a"] and fake.redelivered == [1]


@pytest.mark.parametrize(
    ("page", "says"),
    [
        (httpx.Response(200, json={"message": "Server Error"}), "GitHub's delivery listing is a dict, not a list"),
        (httpx.Response(200, content=b"<html>", headers={"content-type": "text/html"}), "is not JSON"),
    ],
    ids=["object", "not-json"],
)
def test_a_malformed_listing_page_is_refused_with_a_log_not_a_crash(
    settings: ServiceSettings,
    queue: SqliteDeliveryQueue,
    caplog: pytest.LogCaptureFixture,
    page: httpx.Response,
    says: str,
) -> None:
    # SPEC GH8: a listing that is no list of deliveries redelivers nothing, not even what page one named
    fake = FakeGitHub()
    fake.hook_deliveries = [attempt(1, "a", 5, 502), *[attempt(10 + i, f"ok{i}", 6, 200) for i in range(120)]]
    broken = [True]

    def second_page(request: httpx.Request) -> httpx.Response | None:
        return page if broken[0] and "cursor" in request.url.params else None

    clock = Clock()
    sweep = sweeper(fake, settings, queue, clock, wrap=second_page)
    with caplog.at_level(logging.ERROR, logger="interlock.webhooks"):
        assert sweep.tick() is None
    assert fake.redelivered == []
    assert any(says in r.getMessage() and "the next sweep tries again" in r.getMessage() for r in caplog.records)
    broken[0] = False
    report = sweep.tick()  # the lock was let go: the next tick sweeps
    assert report is not None and report.swept == ["a"] and fake.redelivered == [1]


def test_github_failing_the_listing_is_logged_and_the_next_sweep_tries_again(
    settings: ServiceSettings, queue: SqliteDeliveryQueue, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8: the sweep never takes the service down
    fake = FakeGitHub()
    fake.hook_deliveries = [attempt(1, "a", 5, 502)]
    fake.fail("GET", "/app/hook/deliveries", 503, times=10)
    sweep = sweeper(fake, settings, queue, Clock())
    with caplog.at_level(logging.ERROR, logger="interlock.webhooks"):
        assert sweep.tick() is None
    assert fake.redelivered == [] and any("sweep failed" in r.getMessage() for r in caplog.records)
    fake.faults.clear()
    report = sweep.tick()
    assert report is not None and fake.redelivered == [1]


def test_two_replicas_sharing_redis_never_both_redeliver(
    settings: ServiceSettings,
    queue: SqliteDeliveryQueue,
    redis_url: str,  # noqa: F811
) -> None:
    # SPEC GH8: one replica sweeps at a time; what one asked for, and the hour's bound, count for the fleet
    fake = FakeGitHub()
    fake.hook_deliveries = [attempt(n, f"g{n}", 30 - n, 502) for n in range(1, 4)]
    client = redis.Redis.from_url(redis_url)
    client.delete(f"{PREFIX}:lock", f"{PREFIX}:asked")
    bound = replace(SIX_HOURS, max_per_hour=2)
    replicas = []
    for _ in range(2):
        lock, ledger = redis_pieces(redis_url)  # each replica its own client and its own GitHub client
        app = github(fake, settings).as_app()
        replicas.append(Sweeper(app, queue, bound, lock=lock, ledger=ledger, clock=Clock()))
    start = threading.Barrier(2)
    reports: list[Any] = []

    def run(replica: Sweeper) -> None:
        start.wait()
        reports.append(replica.sweep())

    threads = [threading.Thread(target=run, args=(replica,)) for replica in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(report is None for report in reports) == [False, True]  # one swept, one found the lock taken
    assert fake.redelivered == [1, 2]
    for replica in replicas:
        client.delete(f"{PREFIX}:lock")  # the interval is over: either replica may sweep next
        later = replica.sweep()
        assert later is not None and later.swept == [] and later.asked_before == ["g1", "g2"]
        assert later.over_bound == ["g3"]  # the fleet's bound for this hour
    assert fake.redelivered == [1, 2]


def test_a_claim_is_atomic_across_clients(redis_url: str) -> None:  # noqa: F811
    # SPEC GH8: two replicas racing to ask for one delivery: exactly one claims it
    redis.Redis.from_url(redis_url).delete(f"{PREFIX}:race")
    ledgers = [RedisLedger(redis.Redis.from_url(redis_url), f"{PREFIX}:race") for _ in range(8)]
    answers: list[Claim] = []
    start = threading.Barrier(len(ledgers))

    def claim(ledger: RedisLedger) -> None:
        start.wait()
        answers.append(ledger.claim("guid-1", time.time(), 100))

    threads = [threading.Thread(target=claim, args=(ledger,)) for ledger in ledgers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(answers) == sorted([Claim.CLAIMED] + [Claim.ASKED] * 7)
    ledgers[0].unclaim("guid-1")
    assert ledgers[1].claim("guid-1", time.time(), 100) is Claim.CLAIMED
