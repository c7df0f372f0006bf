"""The whole loop on loopback: the real service (uvicorn, in its own process), real `interlock step` jobs,
and a stand-in for GitHub's REST API on loopback backed by a real bare git repository.

label → run branch → missions by a scripted agent → review FAIL, then PASS → gate approved by a pull-request
review → pull request ready → merged → done. On the way the service is restarted mid-run, and one job dies
without storing a record: the run fails, and a `/interlock resume` comment carries it on.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue
from app.webhooks.service import QUEUE_FILE
from tests.github.git_github import GitBackedGitHub, Loopback
from tests.github.test_flows import example
from tests.helpers import ROOT
from tests.webhooks.conftest import SECRET, pem_key, signed

REPO = "octo/app"
GRAPH = {
    "name": "loop",
    "entry": "build",
    "nodes": [
        {"stage": "build", "capability": "coding"},
        {"stage": "review", "capability": "review"},
        {"stage": "polish", "capability": "writing", "humanGate": True},
    ],
    "edges": [
        {"from": "build", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "FAIL", "to": "build"},
        {"from": "review", "verdict": "PASS", "to": "polish"},
        {"from": "polish", "verdict": "PASS", "to": "__end__"},
    ],
}
AGENT = r"""
import os, pathlib, sys
sys.stdin.read()
stage, mission = os.environ["INTERLOCK_STAGE"], os.environ["INTERLOCK_MISSION"]
if stage == "build":
    pathlib.Path("feature.txt").write_text(f"feature, mission {mission}\n")
    print(f"Built in mission {mission}.\nVERDICT: PASS")
elif stage == "review":
    print("1. the error path is untested\nVERDICT: FAIL" if mission == "2" else "Looks right.\nVERDICT: PASS")
else:
    pathlib.Path("CHANGELOG.md").write_text("- the feature\n")
    print("Changelog written.\nVERDICT: PASS")
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bare_origin(tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(seed)], check=True, capture_output=True)
    (seed / ".github" / "interlock" / "graphs").mkdir(parents=True)
    (seed / "README.md").write_text("# app\n")
    (seed / ".github" / "interlock.yml").write_text("base: develop\ndefault_graph: loop\ngatekeepers: [carol]\n")
    (seed / ".github" / "interlock" / "graphs" / "loop.json").write_text(json.dumps(GRAPH))
    (seed / ".github" / "workflows").mkdir()
    shutil.copy(ROOT / ".github" / "workflows" / "interlock.yml", seed / ".github" / "workflows" / "interlock.yml")
    git(seed, "add", "--all")
    git(seed, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "--quiet", "-m", "initial")
    git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main", "HEAD:refs/heads/develop")
    return bare


SETTLE_S = 120.0  # only keeps a broken test from hanging: nothing asserts how long a delivery took


class Service:
    """`interlock serve` in its own process, restartable."""

    def __init__(self, api_url: str, logs: Path) -> None:
        self.port = free_port()
        self.logs = logs
        self.env = {
            **os.environ,
            "GITHUB_APP_ID": "12345",
            "GITHUB_APP_PRIVATE_KEY": pem_key(),
            "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
            "GITHUB_API_URL": api_url,
            "GITHUB_APP_SLUG": "interlock-app",
            "PYTHONPATH": str(ROOT),
            "INTERLOCK_DATA_DIR": str(logs / "data"),  # the durable delivery queue, kept across restarts
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.deliveries = 0

    def start(self) -> None:
        log = (self.logs / f"service-{time.monotonic_ns()}.log").open("wb")
        argv = [sys.executable, "-m", "app", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.logs)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the service did not start: " + "".join(p.read_text() for p in self.logs.glob("*.log")))

    def stop(self) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(timeout=15)

    def deliver(self, event: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One delivery, answered 202 at once; one the service queued is waited for in the queue file its
        workers write (another process's view of the same SQLite file), and its recorded outcome returned."""
        self.deliveries += 1
        delivery = f"e2e-{self.deliveries}"
        body, headers = signed(event, payload, delivery=delivery)
        response = httpx.post(f"http://127.0.0.1:{self.port}/api/github/webhooks", content=body, headers=headers)
        assert response.status_code == 202, response.text
        answer: dict[str, Any] = response.json()
        if answer.get("outcome") != "queued":
            return answer
        queue = SqliteDeliveryQueue(Path(self.env["INTERLOCK_DATA_DIR"]) / QUEUE_FILE)
        give_up = time.monotonic() + SETTLE_S
        while (record := queue.record(delivery)) is None or record.state not in ("applied", "failed"):
            assert time.monotonic() < give_up, f"{delivery} did not settle: {record}"
            time.sleep(0.05)
        return {**answer, "state": str(record.state), "outcome": record.outcome}


class Loop:
    def __init__(self, tmp_path: Path, fake: GitBackedGitHub, service: Service, origin: Path) -> None:
        self.tmp, self.fake, self.service, self.origin = tmp_path, fake, service, origin
        self.agent = tmp_path / "agent.py"
        self.agent.write_text(AGENT)
        self.done_jobs = 0

    def pending_jobs(self) -> list[dict[str, str]]:
        return [d["inputs"] for d in self.fake.dispatches[self.done_jobs :]]

    def run_job(self, inputs: dict[str, str], dies: bool = False) -> None:
        """One dispatched mission as the workflow runs it: the `work` job in a checkout of the run branch with
        a read-only token, the `deliver` job with the write token and no checkout, then GitHub's
        workflow_run event. A job that dies hands nothing over and stores nothing."""
        branch = self.fake.dispatches[self.done_jobs]["ref"]  # dispatched on the run branch (SPEC GH3)
        self.done_jobs += 1
        handoff = self.tmp / f"handoff-{inputs['mission']}"
        if not dies:
            checkout = self.tmp / f"job-{inputs['mission']}"
            subprocess.run(["git", "clone", "--quiet", "-b", branch, str(self.origin), str(checkout)], check=True)
            agent = f"command:{sys.executable} {self.agent}"
            self.step(inputs, "work", handoff, "--workdir", str(checkout), "--agent", agent)
            self.step(inputs, "deliver", handoff, "--remote", str(self.origin), "--work-result", "success")
        payload = example("workflow_run", "completed.payload.json")
        payload["workflow_run"] = {
            **payload["workflow_run"],
            "display_title": f"interlock {inputs['run']} mission {inputs['mission']} ({inputs['stage']})",
            "event": "workflow_dispatch",
            "path": ".github/workflows/interlock.yml",
            "head_branch": branch,
            "conclusion": "failure" if dies else "success",
            "updated_at": now(),
        }
        payload["sender"] = {**payload["sender"], "login": "interlock-app[bot]", "type": "Bot"}  # the app dispatched it
        assert self.service.deliver("workflow_run", payload)["outcome"] == "handled"

    def step(self, inputs: dict[str, str], phase: str, handoff: Path, *extra: str) -> None:
        argv = [sys.executable, "-m", "app", "step", "--run", inputs["run"], "--mission", inputs["mission"]]
        argv += ["--phase", phase, "--handoff", str(handoff), *extra]
        env = {"PATH": os.environ["PATH"], "HOME": str(self.tmp), "PYTHONPATH": str(ROOT), "GITHUB_TOKEN": "ghs_x" * 5}
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=self.tmp)
        assert result.returncode == 0, result.stderr

    def record(self, run_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(git(self.origin, "show", f"interlock/state:runs/{run_id}.json"))
        return data


def stand_in(origin: Path) -> GitBackedGitHub:
    fake = GitBackedGitHub(origin, REPO)
    fake.permissions.update({(REPO, "alice"): "write", (REPO, "carol"): "admin"})
    return fake


def labeled_by_alice() -> dict[str, Any]:
    """The corpus's `issues.labeled`, with the trigger label added now by a person with write permission."""
    labeled = example("issues", "labeled.payload.json")
    labeled["label"] = {**labeled["label"], "name": "feature-request"}
    labeled["sender"] = {**labeled["sender"], "login": "alice", "type": "User"}
    labeled["issue"] = {**labeled["issue"], "labels": [{"name": "feature-request"}], "updated_at": now()}
    return labeled


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Loop]:
    origin = bare_origin(tmp_path)
    fake = stand_in(origin)
    with Loopback(fake) as server:
        (tmp_path / "logs").mkdir()
        service = Service(server.url, tmp_path / "logs")
        service.start()
        try:
            yield Loop(tmp_path, fake, service, origin)
        finally:
            service.stop()


def test_the_whole_loop_on_loopback(loop: Loop) -> None:
    # SPEC GH1-GH8, E1, J3, H1: one run from label to merge, across a restart and a job that died
    labeled = labeled_by_alice()
    issue = labeled["issue"]["number"]
    run_id, branch = f"issue-{issue}", f"interlock/issue-{issue}"
    assert loop.service.deliver("issues", labeled)["outcome"] == "handled"
    assert git(loop.origin, "log", "-1", "--format=%s", branch).startswith("interlock: start")
    assert [job["stage"] for job in loop.pending_jobs()] == ["build"]

    loop.run_job(loop.pending_jobs()[0])  # build, visit 1
    loop.service.stop()  # the service restarts mid-run: everything it needs is on GitHub
    loop.service.start()
    loop.run_job(loop.pending_jobs()[0])  # review, visit 1: FAIL
    assert loop.record(run_id)["visits"] == {"build": 2, "review": 1}

    loop.run_job(loop.pending_jobs()[0], dies=True)  # build, visit 2: the job dies without a record
    stuck = loop.record(run_id)
    assert stuck["status"] == "failed" and "without storing a mission record" in stuck["reason"]["message"]
    comment = example("issue_comment", "created.payload.json")
    comment["issue"] = {**comment["issue"], "number": issue}
    comment["comment"] = {**comment["comment"], "body": "/interlock resume", "created_at": now()}
    comment["sender"] = {**comment["sender"], "login": "alice", "type": "User"}
    assert loop.service.deliver("issue_comment", comment)["outcome"] == "handled"
    assert loop.record(run_id)["status"] == "running"

    for stage in ("build", "review", "polish"):
        (job,) = loop.pending_jobs()
        assert job["stage"] == stage
        loop.run_job(job)
    gated = loop.record(run_id)
    assert gated["status"] == "gate_wait" and gated["gate"]["stage"] == "polish"
    pull = loop.fake.pulls[int(gated["links"]["pr"])]
    assert pull["draft"] is True and pull["head"] == branch and pull["reviewers"] == ["carol"]

    review = example("pull_request_review", "submitted.payload.json")
    review["pull_request"]["head"] = {**review["pull_request"]["head"], "ref": branch}
    review["review"] = {**review["review"], "state": "approved", "body": "Ship it", "user": {"login": "carol"}}
    review["review"]["submitted_at"] = now()
    head = git(loop.origin, "rev-parse", branch)
    assert gated["gate"]["head"] == head  # SPEC H5: the real job's record named the head it pushed
    review["review"]["commit_id"] = head  # the review is of what the gate opened on
    assert loop.service.deliver("pull_request_review", review)["outcome"] == "handled"
    assert loop.record(run_id)["status"] == "awaiting_merge" and pull["draft"] is False

    merger = loop.tmp / "merger"
    subprocess.run(["git", "clone", "--quiet", "-b", "develop", str(loop.origin), str(merger)], check=True)
    git(
        merger,
        "-c",
        "user.name=Carol",
        "-c",
        "user.email=c@example.com",
        "merge",
        "--quiet",
        "--no-ff",
        f"origin/{branch}",
    )
    git(merger, "push", "--quiet", "origin", "develop")
    closed = example("pull_request", "closed.payload.json")
    closed["pull_request"] = {
        **closed["pull_request"],
        "merged": True,
        "closed_at": now(),
        "head": {**closed["pull_request"]["head"], "ref": branch},
    }
    assert loop.service.deliver("pull_request", closed)["outcome"] == "handled"

    final = loop.record(run_id)
    assert final["status"] == "done" and final["mission_count"] == 6
    assert git(loop.origin, "show", "develop:feature.txt") == "feature, mission 4"
    assert git(loop.origin, "show", "develop:CHANGELOG.md") == "- the feature"
    missions = git(loop.origin, "ls-tree", "--name-only", f"interlock/state:runs/{run_id}/missions/0000").splitlines()
    assert missions == [
        "0001-build.json",
        "0002-review.json",
        "0004-build.json",
        "0005-review.json",
        "0006-polish.json",
    ]
    built = json.loads(git(loop.origin, "show", f"interlock/state:runs/{run_id}/missions/0000/0001-build.json"))
    assert built["git"]["files_changed"] == ["feature.txt"] and built["git"]["ahead"] == 2  # SPEC E2: read by the job
    authors = set(git(loop.origin, "log", "--format=%an", f"develop..{branch}").splitlines())
    assert authors <= {"Interlock"}
    assert loop.fake.labels[(REPO, issue)] == ["interlock:done"]
    assert loop.fake.problems == []  # every request matched GitHub's OpenAPI description


def test_the_stand_ins_ref_update_is_a_compare_and_swap(tmp_path: Path) -> None:
    # the stand-in must not be kinder than GitHub: a ref moved by a `git push` after it was read is not lost
    origin = bare_origin(tmp_path)
    fake = GitBackedGitHub(origin, REPO)
    head = fake.refs[(REPO, "main")]
    tree = fake.commits[head]["tree"]
    ours = fake._store_commit(tree, [head], "ours")
    theirs = fake._store_commit(tree, [head], "theirs")
    subprocess.run(["git", "--git-dir", str(origin), "update-ref", "refs/heads/main", theirs, head], check=True)
    fake.refs = {(REPO, "main"): head}  # type: ignore[assignment]  # what the stand-in read before the push
    request = httpx.Request("PATCH", "http://github.test/api/v3/repos/octo/app/git/refs/heads/main")
    response = fake._update_ref(request, {"sha": ours, "force": False}, REPO, "main")
    assert response.status_code == 422
    assert git(origin, "rev-parse", "main") == theirs
