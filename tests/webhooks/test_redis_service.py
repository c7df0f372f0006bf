"""The service with ``INTERLOCK_REDIS_URL``: the shared queue, Redis unreachable at start, Redis gone later
(SPEC GH8, issue 27). A real redis-server of each test's own (tests/redis_server.py), stopped and started again."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from app.webhooks.deliveries.sqlite_queue import KEEP_APPLIED_S, SqliteDeliveryQueue
from app.webhooks.delivery import Delivery
from app.webhooks.receiver import QUEUE_DOWN
from app.webhooks.router import Outcome, Router
from app.webhooks.service import WEBHOOK_PATH, create_app
from app.webhooks.settings import ServiceSettings
from tests.helpers import ROOT, doc
from tests.redis_server import RedisServer, free_port, redis_available
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled, settle


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
    with service(replace(settings, redis_url=server.url, data_dir=tmp_path / "data"), applied) as client:
        assert isinstance(client.app.state.queue, RedisDeliveryQueue)  # type: ignore[attr-defined]
        assert client.get("/healthz").json() == {
            "status": "ok",
            "queue": "redis",
            "waiting": 0,
            "limiter": "in-process",
        }
        record = post_settled(client, *labeled(1))
        assert (record.outcome, applied) == ("handled", ["redis-1"])
    shared = RedisDeliveryQueue.from_url(server.url).record("redis-1")  # what another replica reads
    assert shared is not None and shared.outcome == "handled"
    assert not (tmp_path / "data" / "queue.sqlite3").exists()


def test_redis_unreachable_at_start_falls_back_to_the_sqlite_queue(
    settings: ServiceSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8 (issue 27: never fail a delivery over Redis): the service starts, says so, and applies deliveries
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    applied: list[str] = []
    with caplog.at_level(logging.WARNING, logger="interlock.webhooks"):
        client = service(replace(settings, redis_url=unreachable, data_dir=tmp_path / "data"), applied)
    lines = [r.getMessage() for r in caplog.records if "redis unreachable" in r.getMessage()]
    assert len(lines) == 1 and "own SQLite file in the data folder" in lines[0]
    with client:
        assert isinstance(client.app.state.queue, SqliteDeliveryQueue)  # type: ignore[attr-defined]
        assert client.get("/healthz").json() == {
            "status": "ok",
            "queue": "sqlite",
            "waiting": 0,
            "limiter": "in-process",
        }
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
        assert client.get("/healthz").json() == {
            "status": "ok",
            "queue": "redis",
            "waiting": 0,
            "limiter": "in-process",
        }


def readme_paragraph(title: str) -> str:
    section = doc("operating/scaling.md", "operating/service.md").split("# The service", 1)[1]
    return " ".join(section[section.index(title) :].split("\n\n", 1)[0].split())


def test_the_readme_says_what_the_redis_queue_does() -> None:
    # README "The service", **The queue with Redis**: each claim names what the code and the tests above hold
    text = readme_paragraph("**The queue with Redis**")
    settings_source = (ROOT / "app" / "webhooks" / "settings.py").read_text(encoding="utf-8")
    assert all(name in settings_source for name in ("INTERLOCK_REDIS_URL", "INTERLOCK_VISIBILITY_S"))
    assert "With `INTERLOCK_REDIS_URL` set" in text and "lapses after `INTERLOCK_VISIBILITY_S`" in text
    assert KEEP_APPLIED_S == 7 * 24 * 3600 and "Applied records are kept 7 days, without their bodies" in text
    assert (
        "not Redis Streams" in text
        and "XREADGROUP" not in (ROOT / "app/webhooks/deliveries/redis_queue.py").read_text()
    )
    assert '"--appendonly", "yes"' in (ROOT / "compose.yaml").read_text()
    assert "Run Redis with `appendonly yes`, as `compose.yaml` does" in text
    assert (SqliteDeliveryQueue.backend, RedisDeliveryQueue.backend) == ("sqlite", "redis")
    assert '`/healthz` says `"queue": "sqlite"` (else `"redis"`)' in text
    assert "a delivery is answered **503**, not stored" in text and "`/healthz` answers 503 meanwhile" in text


def test_a_redis_that_refuses_writes_answers_503(
    settings: ServiceSettings, server: RedisServer, tmp_path: Path
) -> None:
    # SPEC GH8: Redis at its maxmemory (with noeviction, its default) stores nothing: 503, never a 500 or a 202
    applied: list[str] = []
    with service(replace(settings, redis_url=server.url, data_dir=tmp_path / "data"), applied) as client:
        redis.Redis.from_url(server.url).config_set("maxmemory", "1")
        body, headers = labeled(5)
        answer = client.post(WEBHOOK_PATH, content=body, headers=headers)
        assert answer.status_code == 503 and answer.json() == {"delivery": "redis-5", "error": QUEUE_DOWN}
        redis.Redis.from_url(server.url).config_set("maxmemory", "0")
        assert post_settled(client, body, headers).outcome == "handled"  # the redelivery
        assert applied == ["redis-5"]


def test_a_worker_that_cannot_record_an_end_lives_on_and_the_delivery_is_applied_again(
    settings: ServiceSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8: Redis gone while a handler runs: the worker survives the failed `done`, the lease lapses once
    # Redis is back, and the delivery is taken again (the run journal, keyed by its id, absorbs the second run)
    redis_available()
    server = RedisServer(tmp_path / "redis", appendonly=True)  # the lease outlives the restart
    server.workdir.mkdir()
    server.start()
    running, release = threading.Event(), threading.Event()
    runs: list[str] = []
    router = Router()

    @router.on("issues", "labeled")
    def handle(delivery: Delivery) -> Outcome:
        runs.append(delivery.delivery_id)
        running.set()
        release.wait(timeout=30)
        return Outcome.HANDLED

    options = replace(settings, redis_url=server.url, data_dir=tmp_path / "data", visibility_s=1.0, workers=1)
    try:
        with TestClient(create_app(options, router)) as client:
            body, headers = labeled(6)
            assert client.post(WEBHOOK_PATH, content=body, headers=headers).status_code == 202
            assert running.wait(timeout=30)
            server.stop()
            with caplog.at_level(logging.WARNING, logger="interlock.webhooks"):
                release.set()
                give_up = time.monotonic() + 30
                while not any("the end of redis-6 could not be recorded" in r.getMessage() for r in caplog.records):
                    assert time.monotonic() < give_up, "the worker's done never failed"
                    time.sleep(0.01)
                server.start()
                record = settle(client.app, "redis-6")  # type: ignore[arg-type]
            assert (record.outcome, record.attempts, runs) == ("handled", 2, ["redis-6", "redis-6"])
    finally:
        server.stop()
