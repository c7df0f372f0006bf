"""Load on the webhook service over loopback, from this second process, next to a bare FastAPI app.

Run: ``python -m tests.bench.bench_service [--deliveries 100000]`` (prints figures; not a test).

1. throughput: a closed loop of signed deliveries at a fixed concurrency, for both servers;
2. latency at 200 requests/s: p50 and p99 of the webhook service at that fixed rate;
3. resident memory of the service after 10,000, 50,000 and 100,000 deliveries with distinct ids.
Targets: at least 50% of the bare app's throughput; p99 under 50 ms at 200 requests/s; memory bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.webhooks.signature import sign
from tests.helpers import ROOT
from tests.webhooks.conftest import EXAMPLES, SECRET

PAYLOADS = [
    EXAMPLES / "ping" / "payload.json",
    EXAMPLES / "issues" / "labeled.payload.json",
    EXAMPLES / "pull_request_review" / "submitted.payload.json",
]
URL = "http://127.0.0.1:{port}/api/github/webhooks"
TIMEOUT = httpx.Timeout(60.0, pool=None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(kind: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "tests.bench.serve", kind, str(port)], env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{kind} server did not start")


def requests(count: int, start_at: int = 0) -> list[tuple[bytes, dict[str, str]]]:
    bodies = []
    for path in PAYLOADS:
        bodies.append((path.parent.name, json.dumps(json.loads(path.read_text())).encode()))
    built = []
    for index in range(start_at, start_at + count):
        event, body = bodies[index % len(bodies)]
        headers = {
            "x-github-event": event,
            "x-github-delivery": f"bench-{index}",
            "x-hub-signature-256": sign(SECRET, body),
            "content-type": "application/json",
        }
        built.append((body, headers))
    return built


async def closed_loop(port: int, seconds: float, concurrency: int) -> float:
    prepared = requests(200_000)
    sent = 0
    stop = time.monotonic() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal sent
        while time.monotonic() < stop:
            body, headers = prepared[sent % len(prepared)]
            sent += 1
            response = await client.post(URL.format(port=port), content=body, headers=headers)
            assert response.status_code < 500, response.text

    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency), timeout=TIMEOUT) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return sent / seconds


async def fixed_rate(port: int, rate: int, seconds: float) -> list[float]:
    prepared = requests(int(rate * seconds), start_at=500_000)
    latencies: list[float] = []

    async def one(client: httpx.AsyncClient, body: bytes, headers: dict[str, str]) -> None:
        started = time.perf_counter()
        response = await client.post(URL.format(port=port), content=body, headers=headers)
        latencies.append(time.perf_counter() - started)
        assert response.status_code < 500

    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=64), timeout=TIMEOUT) as client:
        tasks = []
        begin = time.perf_counter()
        for index, (body, headers) in enumerate(prepared):
            delay = begin + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(client, body, headers)))
        await asyncio.gather(*tasks)
    return latencies


WRK_SCRIPT = """
counter = 0
request = function()
  counter = counter + 1
  wrk.headers["X-GitHub-Delivery"] = "wrk-" .. tostring(math.random(1, 1e12)) .. "-" .. counter
  return wrk.format("POST", nil, nil, wrk.body)
end
"""


def wrk_throughput(port: int, seconds: int = 5) -> float | None:
    """Requests/s measured by wrk (a C load generator), when it is installed: the Python client above tops out
    near a thousand requests a second, so it cannot tell the two servers apart."""
    if shutil.which("wrk") is None:
        return None
    body = json.dumps(json.loads(PAYLOADS[0].read_text())).encode()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "post.lua"
        script.write_text(
            f"wrk.method = 'POST'\nwrk.body = {json.dumps(body.decode())}\n"
            f"wrk.headers['Content-Type'] = 'application/json'\nwrk.headers['X-GitHub-Event'] = 'ping'\n"
            f"wrk.headers['X-Hub-Signature-256'] = '{sign(SECRET, body)}'\n{WRK_SCRIPT}"
        )
        result = subprocess.run(
            ["wrk", "-t2", "-c32", f"-d{seconds}s", "-s", str(script), URL.format(port=port)],
            capture_output=True,
            text=True,
            check=True,
        )
    line = next(line for line in result.stdout.splitlines() if line.startswith("Requests/sec:"))
    return float(line.split()[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def memory_curve(port: int, pid: int, total: int) -> list[tuple[int, int]]:
    points = []
    sent = 0
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=16), timeout=TIMEOUT) as client:
        for mark in (total // 10, total // 2, total):
            while sent < mark:
                batch = requests(min(2_000, mark - sent), start_at=1_000_000 + sent)
                await asyncio.gather(*(client.post(URL.format(port=port), content=b, headers=h) for b, h in batch))
                sent += len(batch)
            points.append((sent, rss_kib(pid)))
    return points


def main() -> int:
    total = int(sys.argv[sys.argv.index("--deliveries") + 1]) if "--deliveries" in sys.argv else 100_000
    results: dict[str, float] = {}
    for kind in ("bare", "interlock"):
        process, port = start(kind)
        try:
            asyncio.run(closed_loop(port, 1.0, 16))  # warm up
            results[kind] = asyncio.run(closed_loop(port, 5.0, 16))
            measured = wrk_throughput(port)
            if measured is not None:
                results[f"wrk-{kind}"] = measured
            if kind == "interlock":
                latencies = sorted(asyncio.run(fixed_rate(port, 200, 5.0)))
                curve = asyncio.run(memory_curve(port, process.pid, total))
        finally:
            process.terminate()
            process.wait()
    ratio = results["interlock"] / results["bare"]
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
    print(
        f"{'throughput, 16 concurrent (requests/s)':<44} interlock {results['interlock']:8.0f}   bare FastAPI "
        f"{results['bare']:8.0f}   ratio {ratio:.2f} (target >= 0.50): {'OK' if ratio >= 0.5 else 'MISSED'}"
    )
    if "wrk-bare" in results:
        wrk_ratio = results["wrk-interlock"] / results["wrk-bare"]
        verdict = "OK" if wrk_ratio >= 0.5 else "MISSED"
        print(
            f"{'throughput with wrk, 32 connections':<44} interlock {results['wrk-interlock']:8.0f}   bare FastAPI "
            f"{results['wrk-bare']:8.0f}   ratio {wrk_ratio:.2f} (target >= 0.50): {verdict}"
        )
    print(
        f"{'latency at 200 requests/s (ms)':<44} p50 {p50:6.1f}   p99 {p99:6.1f} over {len(latencies)} deliveries "
        f"(target p99 < 50): {'OK' if p99 < 50 else 'MISSED'}"
    )
    print(
        "resident memory of the service: "
        + ", ".join(f"{count:,} deliveries {kib / 1024:.1f} MiB" for count, kib in curve)
    )
    growth = curve[-1][1] - curve[0][1]
    print(
        f"growth from {curve[0][0]:,} to {curve[-1][0]:,} deliveries: {growth / 1024:.1f} MiB "
        f"(bounded: {'OK' if growth < 20 * 1024 else 'MISSED'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
