"""Load on the webhook service over loopback, from this second process, next to a bare FastAPI app.

Run: ``python -m tests.bench.bench_service [--rounds 3] [--deliveries 100000]`` (prints figures; not a test).

The two servers alternate in rounds (bare then service, service then bare, ...), each started afresh, so that
both see the same load on a shared machine; figures are medians and ranges over the rounds, ratios of the same
rounds. In each round, for each server:
1. throughput: a closed loop of signed deliveries at a fixed concurrency (the Python client below), and with
   ``wrk`` (a C load generator) when it is installed — the Python client tops out near a thousand requests a
   second for both servers, so wrk's figure is the one that tells them apart;
2. latency at 200 requests/s: p50 and p99 at that fixed rate;
3. resident memory (VmRSS) right after that load.
Then, once per server (alternating too), resident memory after 10%, 50% and 100% of ``--deliveries``
deliveries with distinct ids: the service's against the bare app's, measured the same way.
Targets (issue 16, item 6): at least 0.6 of the bare app's throughput; p99 under 50 ms at 200 requests/s;
resident memory within 1.3x of the bare app's; the service's memory bounded as deliveries grow.
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
from tests.webhooks.conftest import EXAMPLES, SECRET, pem_key

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


KINDS = ("bare", "interlock")
THROUGHPUT_TARGET = 0.6
MEMORY_TARGET = 1.3
P99_TARGET_MS = 50.0


def start(kind: str, key: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_APP_KEY": key, "BENCH_WEBHOOK_SECRET": SECRET.decode()}
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


def one_round(kind: str, key: str) -> dict[str, float]:
    """One server started afresh: its throughput (Python client, and wrk if installed), its latency at 200
    requests/s, and its resident memory after that load."""
    process, port = start(kind, key)
    try:
        asyncio.run(closed_loop(port, 1.0, 16))  # warm up
        got = {"python": asyncio.run(closed_loop(port, 5.0, 16))}
        measured = wrk_throughput(port)
        if measured is not None:
            got["wrk"] = measured
        latencies = sorted(asyncio.run(fixed_rate(port, 200, 5.0)))
        got["p50"] = statistics.median(latencies) * 1000
        got["p99"] = latencies[int(len(latencies) * 0.99) - 1] * 1000
        got["rss"] = rss_kib(process.pid) / 1024
    finally:
        process.terminate()
        process.wait()
    return got


def memory_of(kind: str, key: str, total: int) -> list[tuple[int, int]]:
    process, port = start(kind, key)
    try:
        return asyncio.run(memory_curve(port, process.pid, total))
    finally:
        process.terminate()
        process.wait()


def spread(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def compare(title: str, rounds: list[dict[str, dict[str, float]]], figure: str, target: float, higher: bool) -> None:
    """One figure of both servers over the rounds, and the service's to the bare app's (ratio of medians, and
    of each round)."""
    if figure not in rounds[0]["bare"]:
        return
    service = [each["interlock"][figure] for each in rounds]
    bare = [each["bare"][figure] for each in rounds]
    ratio = statistics.median(service) / statistics.median(bare)
    each = ", ".join(f"{s / b:.2f}" for s, b in zip(service, bare, strict=True))
    met = ratio >= target if higher else ratio <= target
    sign = ">=" if higher else "<="
    digits = 1 if figure == "rss" else 0
    print(
        f"{title:<42} interlock {spread(service, digits):>20}   bare FastAPI {spread(bare, digits):>20}   "
        f"ratio {ratio:.2f} (rounds: {each}; target {sign} {target}): {'OK' if met else 'MISSED'}"
    )


def main() -> int:
    total = int(sys.argv[sys.argv.index("--deliveries") + 1]) if "--deliveries" in sys.argv else 100_000
    count = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    key = pem_key()
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average at the start: {load} on {os.cpu_count()} cores")
    rounds: list[dict[str, dict[str, float]]] = []
    for number in range(count):
        order = KINDS if number % 2 == 0 else KINDS[::-1]
        rounds.append({kind: one_round(kind, key) for kind in order})
    print(f"{count} rounds, the two servers alternating; median (min-max) over the rounds")
    compare("throughput, Python client, 16 concurrent", rounds, "python", THROUGHPUT_TARGET, higher=True)
    compare("throughput with wrk, 32 connections", rounds, "wrk", THROUGHPUT_TARGET, higher=True)
    p50 = [each["interlock"]["p50"] for each in rounds]
    p99 = [each["interlock"]["p99"] for each in rounds]
    bare_p99 = [each["bare"]["p99"] for each in rounds]
    print(
        f"{'latency at 200 requests/s (ms)':<42} interlock p50 {spread(p50, 1)}, p99 {spread(p99, 1)}   "
        f"bare FastAPI p99 {spread(bare_p99, 1)}   (target p99 < {P99_TARGET_MS:.0f}): "
        f"{'OK' if max(p99) < P99_TARGET_MS else 'MISSED'}"
    )
    compare("resident memory after that load (MiB)", rounds, "rss", MEMORY_TARGET, higher=False)
    curves = {kind: memory_of(kind, key, total) for kind in (KINDS if count % 2 == 0 else KINDS[::-1])}
    for kind, curve in curves.items():
        name = "the service" if kind == "interlock" else "the bare app"
        print(
            f"resident memory of {name}: "
            + ", ".join(f"{sent:,} deliveries {kib / 1024:.1f} MiB" for sent, kib in curve)
        )
    service, bare = curves["interlock"][-1][1], curves["bare"][-1][1]
    ratio = service / bare
    print(
        f"after {total:,} deliveries: interlock {service / 1024:.1f} MiB, bare FastAPI {bare / 1024:.1f} MiB, "
        f"ratio {ratio:.2f} (target <= {MEMORY_TARGET}): {'OK' if ratio <= MEMORY_TARGET else 'MISSED'}"
    )
    growth = curves["interlock"][-1][1] - curves["interlock"][0][1]
    print(
        f"growth of the service from {curves['interlock'][0][0]:,} to {total:,} deliveries: {growth / 1024:.1f} MiB "
        f"(bounded: {'OK' if growth < 20 * 1024 else 'MISSED'})"
    )
    print(f"load average at the end: {' '.join(f'{value:.1f}' for value in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
