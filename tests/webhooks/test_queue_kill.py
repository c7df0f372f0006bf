"""kill -9 of a real service process loses no delivery it acknowledged (SPEC GH8, issue 27).

A service answers 202 once a delivery is in its SQLite queue; killed with SIGKILL while deliveries wait and
run, it is started again on the same data folder and applies every one of them. A delivery whose handler had
finished but whose end was not yet recorded when the kill landed is applied again — at most one per worker — which
is why the run journal, keyed by the same delivery ids, stays the last word on doubles.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

from tests.helpers import ROOT
from tests.webhooks.conftest import SECRET, pem_key, signed

DELIVERIES = 40
WORKERS = 2
SETTLE_S = 60.0  # only keeps a broken test from hanging


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(port: int, applied: Path, data: Path, logs: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": pem_key(),
        "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
        "INTERLOCK_DATA_DIR": str(data),
        "INTERLOCK_WORKERS": str(WORKERS),
        "PYTHONPATH": str(ROOT),
    }
    argv = [sys.executable, "-m", "tests.webhooks.slow_service", str(port), str(applied)]
    process = subprocess.Popen(argv, env=env, stdout=logs.open("ab"), stderr=subprocess.STDOUT, cwd=ROOT)
    give_up = time.monotonic() + SETTLE_S
    while time.monotonic() < give_up:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError("the service did not start: " + logs.read_text())


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
