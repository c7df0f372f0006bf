"""kill -9 of a real service process loses no delivery it acknowledged (SPEC GH8, issue 27).

SQLite: a service answers 202 once a delivery is in its SQLite queue; killed with SIGKILL while deliveries wait and
run, it is started again on the same data folder and applies every one of them. A delivery whose handler had
finished but whose end was not yet recorded when the kill landed is applied again — at most one per worker — which
is why the run journal, keyed by the same delivery ids, stays the last word on doubles.

Redis: two service processes take from one Redis queue; one is killed mid-run and not restarted. The other takes
the killed one's leased deliveries once their lease lapsed (``INTERLOCK_VISIBILITY_S``), and every delivery is in
the journal exactly once, in its repository's order.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from app.webhooks.deliveries.durable import QueueState
from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from tests.helpers import ROOT
from tests.webhooks.conftest import SECRET, pem_key, signed

DELIVERIES = 40
REDIS_DELIVERIES = 90  # over 3 repositories: 150 ms each, at most 3 at once, so the kill lands mid-run
WORKERS = 2
SETTLE_S = 60.0  # only keeps a broken test from hanging


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(
    port: int, applied: Path, data: Path, logs: Path, env: dict[str, str] | None = None, journal: Path | None = None
) -> subprocess.Popen[bytes]:
    full_env = {
        **os.environ,
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": pem_key(),
        "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
        "INTERLOCK_DATA_DIR": str(data),
        "INTERLOCK_WORKERS": str(WORKERS),
        "PYTHONPATH": str(ROOT),
        **(env or {}),
    }
    argv = [sys.executable, "-m", "tests.webhooks.slow_service", str(port), str(applied)]
    argv += [str(journal)] if journal is not None else []
    return subprocess.Popen(argv, env=full_env, stdout=logs.open("ab"), stderr=subprocess.STDOUT, cwd=ROOT)


def healthy(process: subprocess.Popen[bytes], port: int, logs: Path) -> subprocess.Popen[bytes]:
    give_up = time.monotonic() + SETTLE_S
    while time.monotonic() < give_up:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError("the service did not start: " + logs.read_text())


def start(port: int, applied: Path, data: Path, logs: Path) -> subprocess.Popen[bytes]:
    return healthy(launch(port, applied, data, logs), port, logs)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_killed_service_applies_every_acknowledged_delivery_after_its_restart(tmp_path: Path) -> None:
    # SPEC GH8: acknowledged means stored durably; a restart applies what the killed process had not
    port, applied, data, logs = free_port(), tmp_path / "applied.txt", tmp_path / "data", tmp_path / "service.log"
    process = start(port, applied, data, logs)
    sent = [f"kill-{n}" for n in range(DELIVERIES)]
    try:
        for n, delivery in enumerate(sent):
            payload = {"action": "labeled", "repository": {"full_name": f"octo/repo-{n % 4}"}}
            body, headers = signed("issues", payload, delivery=delivery)
            answer = httpx.post(f"http://127.0.0.1:{port}/api/github/webhooks", content=body, headers=headers)
            assert answer.status_code == 202 and answer.json()["outcome"] == "queued", answer.text
        os.kill(process.pid, signal.SIGKILL)  # while most deliveries still wait: 40 x 50 ms over 2 workers
        process.wait(timeout=10)
        before = Counter(applied.read_text().split()) if applied.exists() else Counter()
        assert len(before) < DELIVERIES, "the kill came too late to test anything"
        process = start(port, applied, data, logs)
        give_up = time.monotonic() + SETTLE_S
        while len(Counter(applied.read_text().split()) if applied.exists() else ()) < DELIVERIES:
            assert time.monotonic() < give_up, f"not every delivery was applied: {applied.read_text()}"
            time.sleep(0.05)
        counts = Counter(applied.read_text().split())
        assert set(counts) == set(sent)  # none lost
        assert sum(n - 1 for n in counts.values()) <= WORKERS  # a double only where the kill cut a worker short
    finally:
        process.kill()
        process.wait(timeout=10)


def post(port: int, delivery: str, repository: str, resent: bool = False) -> None:
    """``resent``: sent again after the first try's answer was lost (the service may have queued it then)."""
    payload = {"action": "labeled", "repository": {"full_name": repository}}
    body, headers = signed("issues", payload, delivery=delivery)
    answer = httpx.post(f"http://127.0.0.1:{port}/api/github/webhooks", content=body, headers=headers)
    outcomes = ("queued", "duplicate") if resent else ("queued",)
    assert answer.status_code == 202 and answer.json()["outcome"] in outcomes, answer.text


def kill_holding_a_lease(process: subprocess.Popen[bytes], queue: RedisDeliveryQueue, journal: Path) -> None:
    """SIGKILL ``process`` once it has applied a few deliveries and holds a lease (it is mid-run)."""
    mine = f"{socket.gethostname()}:{process.pid}:".encode()
    client = queue.client
    give_up = time.monotonic() + SETTLE_S
    while True:
        assert time.monotonic() < give_up, "the first service never held a lease"
        leased = client.smembers(f"{queue.prefix}:s:leased")
        holders = [client.hget(f"{queue.prefix}:d:{raw.decode()}", "consumer") or b"" for raw in leased]
        if len(lines(journal)) >= 8 and any(holder.startswith(mine) for holder in holders):
            break
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def test_two_services_on_one_redis_queue_apply_each_delivery_once_when_one_is_killed(
    tmp_path: Path, redis_url: str
) -> None:
    # SPEC GH8: any replica takes any delivery; one killed mid-delivery loses nothing, the other takes over its
    # leases after the visibility timeout; each delivery is applied once, a repository's in order, none stuck
    applied, journal, logs = tmp_path / "applied.txt", tmp_path / "journal.txt", tmp_path / "service.log"
    # 150 ms a delivery: the 90 take 4.5 s, so on a loaded machine they are not all applied before the posting ends
    env = {"INTERLOCK_REDIS_URL": redis_url, "INTERLOCK_VISIBILITY_S": "2", "SLOW_HANDLER_S": "0.15"}
    ports = [free_port(), free_port()]
    launched = [launch(port, applied, tmp_path / f"data-{n}", logs, env, journal) for n, port in enumerate(ports)]
    first, second = (healthy(process, port, logs) for process, port in zip(launched, ports, strict=True))
    queue = RedisDeliveryQueue.from_url(redis_url)
    sent = [(f"redis-kill-{n}", f"octo/repo-{n % 3}") for n in range(REDIS_DELIVERIES)]
    try:
        # the kill is watched for while the deliveries are posted: on a loaded machine, posting 90 one after the
        # other can take as long as applying them, and a watch begun after the posting found nothing leased
        with ThreadPoolExecutor(1) as watch:
            killed = watch.submit(kill_holding_a_lease, first, queue, journal)
            for n, (delivery, repository) in enumerate(sent):
                lost = False
                if n % 2 and not killed.done():
                    try:
                        post(ports[0], delivery, repository)
                        continue
                    except httpx.TransportError:  # killed meanwhile: the balancer sends it to the other
                        lost = True
                post(ports[1], delivery, repository, resent=lost)
            killed.result()
        give_up = time.monotonic() + SETTLE_S
        while queue.counts()[QueueState.APPLIED] < len(sent):
            assert time.monotonic() < give_up, f"not every delivery was applied: {queue.counts()}"
            time.sleep(0.05)
        entries = [line.split() for line in lines(journal)]
        assert Counter(delivery for delivery, _ in entries) == Counter(delivery for delivery, _ in sent)  # once each
        for repository in {repository for _, repository in sent}:
            ordered = [delivery for delivery, _ in entries if (delivery, repository) in sent]
            assert ordered == [delivery for delivery, r in sent if r == repository]
        assert {int(pid) for _, pid in entries} == {first.pid, second.pid}  # both applied, the survivor the rest
        runs = Counter(lines(applied))
        assert set(runs) == {delivery for delivery, _ in sent}
        assert sum(n - 1 for n in runs.values()) <= WORKERS  # a handler run again only where the kill cut it short
        taken_over = [d for d, _ in sent if (record := queue.record(d)) is not None and record.attempts > 1]
        assert taken_over, "the kill landed while the first service held no lease"
        assert queue.counts() == {**dict.fromkeys(QueueState, 0), QueueState.APPLIED: len(sent)}  # none stuck
    finally:
        for process in (first, second):
            process.kill()
            process.wait(timeout=10)
