"""The service with ``INTERLOCK_REDIS_URL``: the shared queue, Redis unreachable at start, Redis gone later
(SPEC GH8, issue 27). A real redis-server of each test's own (tests/redis_server.py), stopped and started again."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.webhooks.delivery import Delivery
from app.webhooks.redis_queue import RedisDeliveryQueue
from app.webhooks.router import Outcome, Router
from app.webhooks.service import QUEUE_DOWN, WEBHOOK_PATH, create_app
from app.webhooks.settings import ServiceSettings
from app.webhooks.sqlite_queue import SqliteDeliveryQueue
from tests.redis_server import RedisServer, _free_port, redis_available
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    redis_available()
    server = RedisServer(tmp_path / "redis")
    server.workdir.mkdir()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def labeled(n: int) -> tuple[bytes, dict[str, str]]:
    payload = {"action": "labeled", "repository": {"full_name": "octo/repo"}, "installation": {"id": 7}}
    return signed("issues", payload, delivery=f"redis-{n}")


def service(settings: ServiceSettings, applied: list[str]) -> TestClient:
    router = Router()

    @router.on("issues", "labeled")
    def handle(delivery: Delivery) -> Outcome:
        applied.append(delivery.delivery_id)
        return Outcome.HANDLED

    return TestClient(create_app(settings, router))


def test_with_a_redis_url_the_queue_is_redis(settings: ServiceSettings, server: RedisServer, tmp_path: Path) -> None:
    # SPEC GH8: replicas share one queue in Redis; nothing goes to the data folder
    applied: list[str] = []
    client = service(replace(settings, redis_url=server.url, data_dir=tmp_path / "data"), applied)
    assert isinstance(client.app.state.queue, RedisDeliveryQueue)  # type: ignore[attr-defined]
    assert client.get("/healthz").json() == {"status": "ok", "queue": "redis", "waiting": 0}
    record = post_settled(client, *labeled(1))
    assert (record.outcome, applied) == ("handled", ["redis-1"])
    shared = RedisDeliveryQueue.from_url(server.url).record("redis-1")  # what another replica reads
    assert shared is not None and shared.outcome == "handled"
    assert not (tmp_path / "data" / "queue.sqlite3").exists()


def test_redis_unreachable_at_start_falls_back_to_the_sqlite_queue(
    settings: ServiceSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8 (issue 27: never fail a delivery over Redis): the service starts, says so, and applies deliveries
    unreachable = f"redis://127.0.0.1:{_free_port()}/0"
    applied: list[str] = []
    with caplog.at_level(logging.WARNING, logger="interlock.webhooks"):
        client = service(replace(settings, redis_url=unreachable, data_dir=tmp_path / "data"), applied)
    assert isinstance(client.app.state.queue, SqliteDeliveryQueue)  # type: ignore[attr-defined]
    lines = [r.getMessage() for r in caplog.records if "redis unreachable" in r.getMessage()]
    assert len(lines) == 1 and "own SQLite file in the data folder" in lines[0]
    assert client.get("/healthz").json() == {"status": "ok", "queue": "sqlite", "waiting": 0}
    record = post_settled(client, *labeled(2))
    assert (record.outcome, applied) == ("handled", ["redis-2"])
    assert (tmp_path / "data" / "queue.sqlite3").exists()


def test_redis_gone_later_answers_503_and_the_redelivery_is_applied(
    settings: ServiceSettings, server: RedisServer, tmp_path: Path
) -> None:
    # SPEC GH8: a delivery the queue could not store is answered 503, so GitHub records it failed and it is
    # redelivered; never a 202 for a delivery that was not stored, never a 500; the workers outlive the outage
    applied: list[str] = []
    client = service(replace(settings, redis_url=server.url, data_dir=tmp_path / "data"), applied)
    with client:
        post_settled(client, *labeled(3))
        server.stop()
        body, headers = labeled(4)
        answer = client.post(WEBHOOK_PATH, content=body, headers=headers)
        assert answer.status_code == 503 and answer.json() == {"delivery": "redis-4", "error": QUEUE_DOWN}
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["queue"] == "redis"
        metrics = client.get("/metrics")
        assert metrics.status_code == 200 and "interlock_queue_waiting" not in metrics.text
        assert 'event="issues",outcome="' + QUEUE_DOWN[:64] + '",status="503"} 1' in metrics.text
        server.start()  # the same port; the client connects again by itself
        record = post_settled(client, body, headers)  # GitHub's redelivery of the delivery answered 503
        assert record.outcome == "handled"
        assert applied == ["redis-3", "redis-4"]
        assert client.get("/healthz").json() == {"status": "ok", "queue": "redis", "waiting": 0}
