"""The service as a fleet, measured: replicas sharing one Redis against one process on its SQLite queue.

Run: ``python -m tests.bench.bench_scale [--runs 50] [--deliveries 10000] [--systems redis,sqlite]`` (prints a
table, never a test; about three minutes a system). Needs ``redis-server`` for the Redis system.

Each system is real ``interlock serve`` processes (two sharing one ``redis-server`` with appendonly, or one on
its SQLite queue) and one stand-in GitHub (``tests/github/fake_github.py``) over real HTTP on loopback, which
also plays the Actions runner: a mission it was asked to dispatch is "run" by storing its record on the state
branch and sending ``workflow_run.completed``; a run awaiting its merge gets ``pull_request.closed`` (merged).
The runs go through a three-stage graph, ``build → test → review → end``, on 25 repositories spread over 10
installations, two runs each: 50 runs by default.

The deliveries (``--deliveries`` in all):
- the runs' own (a label, three job ends, a merge: five a run); a fifth of them sent a second time at once to
  the other replica (**duplicates**), a fifth sent again 5-20 s later (**redeliveries**), as GitHub does when a
  person or the sweep asks: each must change nothing;
- the rest what a busy repository sends an App besides: comments that are no command, other workflows' runs
  (both queued and applied as no-ops), pull requests opened (answered ``ignored`` at once); about 100 a second.

One replica is killed with SIGKILL at a random moment and started again 2 s later on the same data folder and
port. The bench sends each delivery to a live replica, as a load balancer would; with one replica, a delivery
that met no live one is what GitHub records as failed, and it is sent again after the restart, as the sweep
would ask (the sweep itself is off here: the stand-in keeps no list of failed deliveries).

Printed, per system: deliveries sent; transitions applied (counted in the runs' journals, each keyed by its
delivery id) against those expected; **lost** (a run delivery no journal applied: must be 0); **doubled** (a
delivery applied twice, or a mission dispatched twice: must be 0); the most content-creating requests any
installation received in any 60 s, both replicas together (must be at most 80); p50 and p99 of the time to the
202 (must be under 1 s); the runs left unfinished. The stand-in answers at once and one request at a time: what
binds is GitHub's content quota, which paces every installation's runs at 80 content-creating requests a
minute.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.engine.record import Run, Status
from app.github.throttle import CONTENT_PER_MINUTE, creates_content
from app.store.journal import STATE_BRANCH, events_folder, record_path
from app.webhooks.deliveries.durable import QueueState
from tests.github.fake_github import FakeGitHub
from tests.github.git_github import Loopback
from tests.helpers import ROOT
from tests.redis_server import RedisServer
from tests.webhooks.conftest import EXAMPLES, SECRET, pem_key, signed
from tests.webhooks.test_queue_kill import free_port

GRAPH = {
    "name": "scale",
    "entry": "build",
    "nodes": [
        {"stage": "build", "capability": "coding"},
        {"stage": "test", "capability": "coding"},
        {"stage": "review", "capability": "review"},
    ],
    "edges": [
        {"from": "build", "verdict": "PASS", "to": "test"},
        {"from": "test", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
        {"from": "review", "verdict": "FAIL", "to": "build"},
    ],
}
MISSION_WORKFLOW = {"event": "workflow_dispatch", "path": ".github/workflows/interlock.yml"}
NOISE_PER_S = 100.0
REPOS, INSTALLATIONS = 25, 10
DELIVERIES_A_RUN = 5  # the label, three job ends, the merge
PEM = pem_key()
SETTLE_S = 600.0  # only keeps a broken system from hanging the bench


def example(event: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXAMPLES / event / name).read_text())
    return loaded


class StandIn:
    """The stand-in GitHub over loopback, one request at a time (it is not thread-safe), counting each
    installation's content-creating requests by when they came."""

    def __init__(self, repos: list[str]) -> None:
        self.fake, self.lock, self.counting = FakeGitHub(), threading.Lock(), threading.Lock()
        self.content: dict[str, list[float]] = {}
        for repo in repos:
            config = "base: develop\ndefault_graph: scale\n"
            graph = json.dumps(GRAPH)
            files = {
                "README.md": "# app",
                ".github/interlock.yml": config,
                ".github/interlock/graphs/scale.json": graph,
            }
            self.fake.seed_branch(repo, "main", files)
            self.fake.seed_branch(repo, "develop", {"README.md": "# app"})
            self.fake.permissions[(repo, "alice")] = "write"
        self.handle = self.fake.handle
        self.fake.handle = self  # type: ignore[method-assign]  # Loopback hands every request to fake.handle
        self.loopback = Loopback(self.fake)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if creates_content(request):  # counted as it arrives, as GitHub counts it, before it waits for the lock
            auth = request.headers.get("authorization", "")
            who = auth.rsplit("ghs_", 1)[1] if "ghs_" in auth else "app"
            with self.counting:
                self.content.setdefault(who, []).append(time.monotonic())
        with self.lock:
            return self.handle(request)

    def peak_per_minute(self) -> int:
        """The most content-creating requests one installation received in any 60 s."""
        peaks = [0]
        for who, times in self.content.items():
            if who != "app":
                peaks += [sum(1 for t in times if start <= t < start + 60) for start in times]
        return max(peaks)

    def state_file(self, repo: str, path: str) -> str | None:
        with self.lock:
            return (
                self.fake.logical_files(repo, STATE_BRANCH).get(path)
                if (repo, STATE_BRANCH) in self.fake.refs
                else None
            )


@dataclass
class Replica:
    """One ``interlock serve`` process, started again on the same port and data folder after a kill."""

    port: int
    data: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/github/webhooks"

    def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        log = (self.data / "service.log").open("ab")
        argv = [sys.executable, "-m", "app", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.data)
        give_up = time.monotonic() + 60
        while time.monotonic() < give_up and self.process.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise SystemExit("a replica did not start: " + (self.data / "service.log").read_text()[-2000:])

    def kill(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


@dataclass
class Tally:
    sent: int = 0
    run_deliveries: set[str] = field(default_factory=set)
    duplicates: int = 0
    redeliveries: int = 0
    refused: list[tuple[str, bytes, dict[str, str]]] = field(default_factory=list)  # no replica was up
    latencies: list[float] = field(default_factory=list)
    answered_at: list[float] = field(default_factory=list)  # when each of ``latencies`` was answered (monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class RunRef:
    repo: str
    issue: int
    installation: int

    @property
    def run_id(self) -> str:
        return f"issue-{self.issue}"

    @property
    def branch(self) -> str:
        return f"interlock/issue-{self.issue}"


def with_repo(payload: dict[str, Any], run: RunRef) -> dict[str, Any]:
    repository = {**payload["repository"], "full_name": run.repo, "default_branch": "main"}
    return {**payload, "repository": repository, "installation": {"id": run.installation}}


def labeled(run: RunRef) -> dict[str, Any]:
    payload = with_repo(example("issues", "labeled.payload.json"), run)
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": run.issue, "labels": [{"name": "feature-request"}]}
    return payload


def job_ended(run: RunRef, seq: int, stage: str, job_id: int) -> dict[str, Any]:
    payload = with_repo(example("workflow_run", "completed.payload.json"), run)
    title = f"interlock {run.run_id} mission {seq} ({stage})"
    job = {"id": job_id, "display_title": title, "conclusion": "success", "head_branch": run.branch}
    payload["workflow_run"] = {**payload["workflow_run"], **job, **MISSION_WORKFLOW}
    return payload


def merged(run: RunRef) -> dict[str, Any]:
    payload = with_repo(example("pull_request", "closed.payload.json"), run)
    head = {**payload["pull_request"]["head"], "ref": run.branch}
    payload["pull_request"] = {**payload["pull_request"], "merged": True, "head": head}
    return payload


def noise(run: RunRef, n: int) -> tuple[str, dict[str, Any]]:
    """What a busy repository sends besides: a comment that is no command, another workflow's run, a new pull
    request."""
    match n % 4:
        case 0 | 1:
            payload = with_repo(example("issue_comment", "created.payload.json"), run)
            payload["comment"] = {**payload["comment"], "body": f"Looks good to me ({n})"}
            return "issue_comment", payload
        case 2:
            payload = with_repo(example("workflow_run", "completed.payload.json"), run)
            ci = {"id": 10_000_000 + n, "path": ".github/workflows/ci.yml", "event": "push", "head_branch": "main"}
            payload["workflow_run"] = {**payload["workflow_run"], **ci}
            return "workflow_run", payload
        case _:
            return "pull_request", with_repo(example("pull_request", "opened.payload.json"), run)


class Fleet:
    """One system under load: its replicas, the stand-in, the deliveries sent and what the journals applied."""

    def __init__(
        self, root: Path, system: str, runs: int, deliveries: int, rng: random.Random, kill: bool = True
    ) -> None:
        self.root, self.system, self.rng, self.kill = root, system, rng, kill
        repos = [f"octo/app-{n:02d}" for n in range(REPOS)]
        self.runs = [
            RunRef(repo, issue, 100 + n % INSTALLATIONS) for issue in range(1, runs + 1) for n, repo in enumerate(repos)
        ][:runs]
        self.noise_total = max(0, deliveries - len(self.runs) * DELIVERIES_A_RUN * 7 // 5)
        self.stand_in = StandIn(repos)
        self.redis = RedisServer(root, appendonly=True) if system == "redis" else None
        self.replicas: list[Replica] = []
        self.alive: set[int] = set()
        self.client = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=64))
        self.pool = ThreadPoolExecutor(16)
        self.tally = Tally()
        self.stopping = threading.Event()
        self.finished: set[RunRef] = set()
        self.merge_sent: set[RunRef] = set()
        self.timers: list[threading.Timer] = []
        self.noise_sent = self.killed_at = self.swept = 0
        self.restarted_at = float("inf")

    def env(self, api_url: str, data: Path) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "GITHUB_APP_ID": "12345",
            "GITHUB_APP_PRIVATE_KEY": PEM,
            "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
            "GITHUB_API_URL": api_url,
            "GITHUB_APP_SLUG": "interlock-app",
            "PYTHONPATH": str(ROOT),
            "INTERLOCK_DATA_DIR": str(data),
            "INTERLOCK_VISIBILITY_S": "15",
            "INTERLOCK_SWEEP_S": "0",
            "INTERLOCK_LOG_LEVEL": "WARNING",
        }
        if self.redis is not None:
            env |= {"INTERLOCK_REDIS_URL": self.redis.url, "INTERLOCK_REPLICAS": "2"}
        return env

    # -- sending, as GitHub and a load balancer in front of the replicas do ----------------------------------
    def send(self, body: bytes, headers: dict[str, str]) -> bool:
        """To a live replica, another if it fails to answer; ``False`` when none answered (GitHub records the
        delivery failed)."""
        live = sorted(self.alive)
        self.rng.shuffle(live)
        for index in live:
            started = time.perf_counter()
            try:
                answer = self.client.post(self.replicas[index].url, content=body, headers=headers)
            except httpx.TransportError:
                continue
            with self.tally.lock:
                self.tally.sent += 1
                self.tally.latencies.append(time.perf_counter() - started)
                self.tally.answered_at.append(time.monotonic())
            if answer.status_code != 202:
                raise SystemExit(f"a delivery was answered {answer.status_code}: {answer.text[:300]}")
            return True
        with self.tally.lock:
            self.tally.refused.append(("", body, headers))
        return False

    def post_run_delivery(self, event: str, payload: dict[str, Any], delivery: str) -> None:
        """A run's delivery; sometimes sent twice at once (a duplicate), sometimes again later (a redelivery)."""
        body, headers = signed(event, payload, delivery=delivery)
        with self.tally.lock:
            self.tally.run_deliveries.add(delivery)
        self.send(body, headers)
        if self.rng.random() < 0.2:
            with self.tally.lock:
                self.tally.duplicates += 1
            self.send(body, headers)
        if self.rng.random() < 0.2:
            with self.tally.lock:
                self.tally.redeliveries += 1
            timer = threading.Timer(self.rng.uniform(5, 20), self.send, (body, headers))
            timer.daemon = True
            timer.start()
            self.timers.append(timer)

    # -- the Actions runner and the people: jobs end, runs get merged ------------------------------------------
    def run_jobs(self) -> None:
        seen = 0
        while not self.stopping.is_set():
            with self.stand_in.lock:
                new = self.stand_in.fake.dispatches[seen:]
            seen += len(new)
            for dispatch in new:
                self.pool.submit(self.end_job, dispatch, seen)
            time.sleep(0.05)

    def end_job(self, dispatch: dict[str, Any], job_id: int) -> None:
        inputs, repo = dispatch["inputs"], dispatch["repo"]
        run = next(r for r in self.runs if r.repo == repo and r.run_id == inputs["run"])
        seq, stage = int(inputs["mission"]), inputs["stage"]
        record = {"seq": seq, "stage": stage, "status": "done", "answer": "done\nVERDICT: PASS", "commits": 1}
        record["usage"] = {"calls": 1, "input_tokens": 10, "cost_usd": 0.01}
        path = f"runs/{run.run_id}/missions/{seq:04d}-{stage}.json"
        with self.stand_in.lock:
            self.stand_in.fake.commit_file(repo, STATE_BRANCH, path, json.dumps(record))
        self.post_run_delivery("workflow_run", job_ended(run, seq, stage, job_id), f"job-{repo}-{run.run_id}-{seq}")

    def status_of(self, run: RunRef) -> Status | None:
        raw = self.stand_in.state_file(run.repo, record_path(run.run_id))
        return None if raw is None else Run.from_journal(raw.encode()).status

    def merge_ready_runs(self) -> None:
        while not self.stopping.is_set():
            for run in self.runs:
                if run in self.finished:
                    continue
                status = self.status_of(run)
                if status is Status.DONE:
                    self.finished.add(run)
                elif status is Status.AWAITING_MERGE and run not in self.merge_sent:
                    self.merge_sent.add(run)
                    self.pool.submit(
                        self.post_run_delivery, "pull_request", merged(run), f"merge-{run.repo}-{run.run_id}"
                    )
            time.sleep(0.5)

    def send_noise(self) -> None:
        started = time.monotonic()
        for n in range(self.noise_total):
            if self.stopping.is_set():
                return
            event, payload = noise(self.rng.choice(self.runs), n)
            body, headers = signed(event, payload, delivery=f"noise-{n}")
            self.pool.submit(self.send, body, headers)
            self.noise_sent = n + 1
            ahead = started + n / NOISE_PER_S - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)

    def kill_one(self) -> None:
        """SIGKILL a replica at a random moment of the noise, start it again 2 s later; then send what met no
        live replica meanwhile, as the sweep would ask GitHub to."""
        if not self.kill:
            return
        when = self.rng.uniform(0.2, 0.6) * self.noise_total
        while self.noise_sent < when and not self.stopping.is_set():
            time.sleep(0.05)
        victim = self.rng.randrange(len(self.replicas))
        self.alive.discard(victim)
        self.replicas[victim].kill()
        self.killed_at = self.noise_sent
        time.sleep(2)
        self.replicas[victim].start()
        self.alive.add(victim)
        self.restarted_at = time.monotonic()
        with self.tally.lock:
            refused, self.tally.refused = self.tally.refused, []
        self.swept = len(refused)
        for _, body, headers in refused:
            self.send(body, headers)

    # -- the whole run ----------------------------------------------------------------------------------------
    def measure(self) -> Figures:
        with self.stand_in.loopback as loopback:
            if self.redis is not None:
                self.redis.start()
            count = 2 if self.redis is not None else 1
            self.replicas = [Replica(free_port(), self.root / f"replica-{n}", {}) for n in range(count)]
            for replica in self.replicas:
                replica.env = self.env(loopback.url, replica.data)
                replica.start()
            self.alive = set(range(count))
            started = time.monotonic()
            threads = [threading.Thread(target=t, daemon=True) for t in (self.run_jobs, self.merge_ready_runs)]
            threads += [threading.Thread(target=self.kill_one, daemon=True)]
            for thread in threads:
                thread.start()
            for run in self.runs:
                self.pool.submit(self.post_run_delivery, "issues", labeled(run), f"label-{run.repo}-{run.run_id}")
            self.send_noise()
            try:
                self.settle(started)
            finally:
                self.stopping.set()
                elapsed = time.monotonic() - started
                for timer in self.timers:
                    timer.cancel()
                self.pool.shutdown(wait=True)
                left = self.queue_counts()
                for replica in self.replicas:
                    replica.stop()
                if self.redis is not None:
                    self.redis.stop()
        return self.figures(elapsed, left)

    def settle(self, started: float) -> None:
        """Until every run is done, every redelivery sent and the queue empty (or SETTLE_S)."""
        while time.monotonic() < started + SETTLE_S:
            timers_done = all(not timer.is_alive() for timer in self.timers)
            counts = self.queue_counts()
            idle = counts.get(QueueState.WAITING, 0) + counts.get(QueueState.LEASED, 0) == 0
            if len(self.finished) == len(self.runs) and timers_done and idle:
                return
            time.sleep(0.5)

    def queue_counts(self) -> dict[QueueState, int]:
        """The shared queue's counts, or the sum of each replica's own."""
        from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
        from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue

        if self.redis is not None:
            return RedisDeliveryQueue.from_url(self.redis.url).counts()
        total: Counter[QueueState] = Counter()
        for replica in self.replicas:
            total.update(SqliteDeliveryQueue(replica.data / "queue.sqlite3").counts())
        return dict(total)

    def figures(self, elapsed: float, left: dict[QueueState, int]) -> Figures:
        applied: Counter[tuple[str, str]] = Counter()  # a transition's event key, by run: keys are the run's own
        for run in self.runs:
            with self.stand_in.lock:
                files = self.stand_in.fake.logical_files(run.repo, STATE_BRANCH)
            for path, text in files.items():
                if path.startswith(events_folder(run.run_id)):
                    applied[(run.repo + run.run_id, json.loads(text)["event"]["key"])] += 1
        dispatched = Counter(
            (d["repo"], d["inputs"]["run"], d["inputs"]["mission"]) for d in self.stand_in.fake.dispatches
        )
        latencies = sorted(self.tally.latencies)
        cuts = statistics.quantiles(latencies, n=100)
        return Figures(
            system=self.system,
            sent=self.tally.sent,
            run_deliveries=len(self.tally.run_deliveries),
            duplicates=self.tally.duplicates,
            redeliveries=self.tally.redeliveries,
            swept=self.swept,
            applied=sum(applied.values()),
            lost=len(self.tally.run_deliveries - {key for _, key in applied}),
            doubled=sum(n - 1 for n in applied.values()) + sum(n - 1 for n in dispatched.values()),
            peak=self.stand_in.peak_per_minute(),
            content=sum(len(times) for who, times in self.stand_in.content.items() if who != "app"),
            p50_ms=cuts[49] * 1000,
            p99_ms=cuts[98] * 1000,
            unfinished=len(self.runs) - len(self.finished),
            failed=left.get(QueueState.FAILED, 0),
            seconds=elapsed,
        )


@dataclass
class Figures:
    system: str
    sent: int
    run_deliveries: int
    duplicates: int
    redeliveries: int
    swept: int
    applied: int
    lost: int
    doubled: int
    peak: int
    content: int
    p50_ms: float
    p99_ms: float
    unfinished: int
    failed: int
    seconds: float

    def line(self) -> str:
        cells = [f"{self.system:<8}"]
        for (_, width, decimals), value in zip(COLUMNS, astuple(self)[1:], strict=True):
            cells.append(f"{value:>{width}.{decimals}f}" if isinstance(value, float) else f"{value:>{width}}")
        return "".join(cells)


# each figure after the system's name: its heading, its width, its decimals if it is a float
COLUMNS = [
    ("sent", 7, 0),
    ("runs'", 6, 0),
    ("dup", 5, 0),
    ("redel", 6, 0),
    ("swept", 6, 0),
    ("applied", 8, 0),
    ("lost", 5, 0),
    ("doubled", 8, 0),
    ("peak", 5, 0),
    ("content", 8, 0),
    ("p50 ms", 8, 1),
    ("p99 ms", 8, 1),
    ("unfin", 6, 0),
    ("failed", 7, 0),
    ("s", 6, 0),
]
HEADER = f"{'system':<8}" + "".join(f"{name:>{width}}" for name, width, _ in COLUMNS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--deliveries", type=int, default=10_000)
    parser.add_argument("--systems", default="redis,sqlite")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--no-kill", action="store_true", help="kill no replica (to compare the rest alone)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(HEADER, flush=True)
    for system in args.systems.split(","):
        with tempfile.TemporaryDirectory(prefix=f"interlock-bench-scale-{system}-") as folder:
            fleet = Fleet(Path(folder), system, args.runs, args.deliveries, rng, kill=not args.no_kill)
            print(fleet.measure().line(), flush=True)
    print(
        f"{args.runs} runs on {REPOS} repositories of {INSTALLATIONS} installations; runs' = the runs' own deliveries;"
        " peak = the most content-creating requests one installation got in any 60 s, both replicas together"
        f" (GitHub's limit {CONTENT_PER_MINUTE}); content = all of them; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
