"""Two real `interlock serve` processes, one redis-server, one stand-in GitHub on loopback (issue 27, SPEC GH8).

Each replica alone would send 80 content-creating requests a minute to the installation, so together 160, and
GitHub would answer the rest with secondary-rate-limit 403s. With the same ``INTERLOCK_REDIS_URL`` they share one
count: 100 deliveries, each of which posts one comment, sent concurrently to both, make at most 80 comments in the
minute. The deliveries the quota has no room for wait in the queue for it, their attempt given back: with one
attempt allowed they would end failed, and GitHub, which saw a 202, would list nothing for the sweep to redeliver.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from app.github.throttle import CONTENT_PER_MINUTE, creates_content
from app.webhooks.deliveries.durable import QueueState
from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from tests.github.fake_github import FakeGitHub
from tests.github.git_github import Loopback
from tests.github.test_flows import example
from tests.helpers import ROOT
from tests.webhooks.conftest import SECRET, pem_key, signed
from tests.webhooks.test_queue_kill import free_port

DELIVERIES = 100  # each posts one comment: more than one minute's quota, fewer than two replicas' own quotas
REPOS = 8  # deliveries of one repository are applied one at a time: eight let the workers run concurrently
SETTLE_S = 60.0  # only keeps a broken test from hanging: nothing asserts how long it took


class Counted:
    """The stand-in's content-creating requests, each with when it came and for which installation's token."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.handle, self.lock, self.serving = fake.handle, threading.Lock(), threading.Lock()
        self.seen: list[tuple[float, str]] = []
        fake.handle = self  # type: ignore[method-assign]  # Loopback hands every request to fake.handle

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if creates_content(request):
            auth = request.headers.get("authorization", "")
            with self.lock:
                self.seen.append((time.monotonic(), auth.rsplit("ghs_", 1)[1] if "ghs_" in auth else "app"))
        with self.serving:  # the stand-in is not thread-safe: two comments at once could get one id
            return self.handle(request)

    def most_in_a_minute(self, who: str) -> int:
        times = sorted(at for at, by in self.seen if by == who)
        return max((sum(1 for t in times if start <= t < start + 60) for start in times), default=0)


def serve(port: int, api_url: str, redis_url: str, data: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "GITHUB_APP_ID": "12345",
        "GITHUB_APP_PRIVATE_KEY": pem_key(),
        "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
        "GITHUB_API_URL": api_url,
        "GITHUB_APP_SLUG": "interlock-app",
        "PYTHONPATH": str(ROOT),
        "INTERLOCK_DATA_DIR": str(data),
        "INTERLOCK_REDIS_URL": redis_url,
        "INTERLOCK_REPLICAS": "2",
        "INTERLOCK_DELIVERY_ATTEMPTS": "1",  # a failure would end a delivery at once: a wait for the quota must not
    }
    data.mkdir(parents=True)
    log = (data / "service.log").open("wb")
    argv = [sys.executable, "-m", "app", "serve", "--port", str(port)]
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data)


def ready(port: int, process: subprocess.Popen[bytes], data: Path) -> dict[str, Any]:
    give_up = time.monotonic() + SETTLE_S
    while time.monotonic() < give_up and process.poll() is None:
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            if answer.status_code == 200:
                return dict(answer.json())
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the service did not start: " + (data / "service.log").read_text())


@pytest.fixture
def stand_in() -> Iterator[tuple[FakeGitHub, Counted, str]]:
    fake = FakeGitHub()
    for n in range(REPOS):
        fake.permissions[(f"octo/app-{n}", "alice")] = "write"
    counted = Counted(fake)
    with Loopback(fake) as loopback:
        yield fake, counted, loopback.url


def test_two_serve_processes_sharing_one_redis_never_pass_80_a_minute(
    stand_in: tuple[FakeGitHub, Counted, str], redis_url: str, tmp_path: Path
) -> None:
    # SPEC GH8: the content quota is the installation's, shared by every replica of the service
    redis.Redis.from_url(redis_url).flushall()
    fake, counted, api_url = stand_in
    ports, folders = [free_port(), free_port()], [tmp_path / "one", tmp_path / "two"]
    processes = [serve(port, api_url, redis_url, data) for port, data in zip(ports, folders, strict=True)]
    try:
        assert [ready(port, p, d)["limiter"] for port, p, d in zip(ports, processes, folders, strict=True)] == [
            "redis",
            "redis",
        ]

        def deliver(n: int) -> int:
            payload = example("issue_comment", "created.payload.json")
            payload["repository"] = {**payload["repository"], "full_name": f"octo/app-{n % REPOS}"}
            payload["comment"] = {**payload["comment"], "body": f"/interlock bogus {n}"}  # answered with one comment
            payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
            body, headers = signed("issue_comment", payload, delivery=f"quota-{n}")
            url = f"http://127.0.0.1:{ports[n % 2]}/api/github/webhooks"
            return httpx.post(url, content=body, headers=headers, timeout=10).status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(deliver, range(DELIVERIES))) == {202}
        queue = RedisDeliveryQueue.from_url(redis_url)  # the one queue both replicas take from
        give_up = time.monotonic() + SETTLE_S
        over = DELIVERIES - CONTENT_PER_MINUTE
        while (now := queue.counts()) != {
            **dict.fromkeys(QueueState, 0),
            QueueState.APPLIED: 80,
            QueueState.WAITING: over,
        }:
            assert time.monotonic() < give_up and not now[QueueState.FAILED], f"not 80 applied and 20 waiting: {now}"
            time.sleep(0.2)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=15)
    applied = queue.counts()[QueueState.APPLIED]
    waiting = [r for n in range(DELIVERIES) if (r := queue.record(f"quota-{n}")) and r.state is QueueState.WAITING]
    assert len(waiting) == over and {r.attempts for r in waiting} == {0}  # taken, deferred, the attempt given back
    assert counted.most_in_a_minute("42") == CONTENT_PER_MINUTE  # the quota was reached, never passed
    assert len(fake.comments) == applied == CONTENT_PER_MINUTE  # each applied delivery posted its one comment
    holders = {
        text for n in range(DELIVERIES) if (text := queue.client.hget(f"{queue.prefix}:d:quota-{n}", "consumer"))
    }
    processes_seen = {holder.decode().rsplit(":worker-", 1)[0] for holder in holders}
    assert {f"{p.pid}" for p in processes} <= {seen.rsplit(":", 1)[1] for seen in processes_seen}  # both took part
