"""A team's queue on one machine (SPEC U5, issue 13 item 8): a team with `concurrency: N` runs at most N local
runs at once across processes; a further `interlock run` of the team waits in line, is told its place, and
starts when a run of the team ends, also when its process is killed with -9. Real processes throughout."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.local.harness import AGENT, make_repo

SLOW = {
    "name": "slow",
    "entry": "work",
    "nodes": [{"stage": "work", "capability": "coding"}],
    "edges": [{"from": "work", "verdict": "PASS", "to": "__end__"}],
}
GATED = {
    "name": "gated",
    "entry": "work",
    "nodes": [{"stage": "work", "capability": "coding", "humanGate": True}],
    "edges": [{"from": "work", "verdict": "PASS", "to": "__end__"}],
}


def team_repo(tmp: Path, concurrency: int = 1) -> Path:
    repo = tmp / "repo"
    make_repo(repo)
    (repo / "graphs").mkdir()
    for graph in (SLOW, GATED):
        (repo / "graphs" / f"{graph['name']}.json").write_text(json.dumps(graph))
    (repo / ".github").mkdir()
    (repo / ".github" / "interlock.yml").write_text(
        f"teams:\n  core:\n    roles: {{dev: {{fullAuthority: true, agent: {json.dumps(AGENT)}}}}}\n"
        f"    graphsets: [graphs]\n    defaultGraph: slow\n    concurrency: {concurrency}\n"
    )
    return repo


class Proc:
    """One `interlock` process with its own script and log folder; stderr in a file, read while it runs."""

    def __init__(self, tmp: Path, repo: Path, name: str, sleep: float, *args: str) -> None:
        self.name, self.tmp = name, tmp
        step = {"answer": "done", "sleep": sleep, "until": str(self.release_file)}
        (tmp / f"{name}.json").write_text(json.dumps({"work": step}))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRIPT": str(tmp / f"{name}.json"), "LOG": str(self.log)}
        command = args or ("run", "--request", name, "--run-id", name, "--gates", "stop")
        self.err = (tmp / f"{name}.err").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app", *command, "--repo", str(repo), "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.err,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    @property
    def release_file(self) -> Path:
        return self.tmp / f"release-{self.name}"

    def release(self) -> None:
        """End the agent's mission now (it waits for this, up to its ``sleep``): the test says when."""
        self.release_file.touch()

    @property
    def log(self) -> Path:
        return self.tmp / f"log-{self.name}"

    def stderr(self) -> str:
        return (self.tmp / f"{self.name}.err").read_text()

    def wait_said(self, text: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.stderr():
            assert self.process.poll() is None or text in self.stderr(), f"{self.name} ended: {self.stderr()}"
            assert time.monotonic() < deadline, f"{self.name} never said {text!r}: {self.stderr()}"
            time.sleep(0.05)

    def wait_mission(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not (self.log / "0001-work.started").exists():
            assert time.monotonic() < deadline, f"{self.name}'s mission never started: {self.stderr()}"
            time.sleep(0.05)

    def result(self) -> dict[str, Any]:
        out, _ = self.process.communicate(timeout=120)
        self.err.close()
        assert self.process.returncode == 0, self.stderr()
        return dict(json.loads(out))

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)  # the runner and its agent die at once
        self.process.wait(timeout=10)
        self.err.close()


def interlock(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRIPT": "/nonexistent", "LOG": str(repo.parent / "log")}
    return subprocess.run(
        [sys.executable, "-m", "app", *args, "--repo", str(repo)], env=env, capture_output=True, text=True, timeout=60
    )


def test_three_runs_of_a_team_of_concurrency_1_run_one_after_the_other_in_order(tmp_path: Path) -> None:
    # SPEC U5: at most `concurrency` at once; the others wait in order, told their place, and start at an end
    repo = team_repo(tmp_path)
    first = Proc(tmp_path, repo, "first", 120)
    first.wait_mission()
    second = Proc(tmp_path, repo, "second", 0.2)
    second.wait_said("team core runs 1 run(s) at once (running: pid")
    assert "waiting, number 1 in line" in second.stderr()
    third = Proc(tmp_path, repo, "third", 0.2)
    third.wait_said("waiting, number 2 in line")
    refused = interlock(repo, "run", "--request", "x", "--run-id", "refused", "--no-wait")
    assert refused.returncode == 2, refused.stderr
    assert "team core already runs 1 run(s) at once (concurrency 1; running: pid" in refused.stderr
    assert "nothing was started; leave out --no-wait to wait in line" in refused.stderr
    first.release()
    runs = [first.result(), second.result(), third.result()]
    assert [run["status"] for run in runs] == ["awaiting_merge"] * 3
    for earlier, later in itertools.pairwise(runs):
        assert earlier["updated_at"] <= later["created_at"], (earlier["id"], later["id"])
    assert (repo / ".git" / "interlock" / "queues" / "core" / "line.json").is_file()
    said = third.stderr()
    assert said.index("number 2 in line") < said.index("number 1 in line") < said.index("a place is free")
    assert (
        "refs/heads/interlock/refused"
        not in subprocess.run(["git", "for-each-ref"], cwd=repo, capture_output=True, text=True).stdout
    )


def test_a_killed_holder_frees_its_place_and_a_killed_waiter_leaves_the_line(tmp_path: Path) -> None:
    # SPEC U5: "whatever way it ends": kill -9 of the process driving a run gives its place to the next
    repo = team_repo(tmp_path)
    holder = Proc(tmp_path, repo, "holder", 120)
    holder.wait_mission()
    waiter = Proc(tmp_path, repo, "waiter", 0.1)
    waiter.wait_said("waiting, number 1 in line")
    last = Proc(tmp_path, repo, "last", 0.1)
    last.wait_said("waiting, number 2 in line")
    waiter.kill()
    last.wait_said("waiting, number 1 in line")
    holder.kill()
    assert last.result()["status"] == "awaiting_merge"
    assert "a place is free" in last.stderr()
    status = interlock(repo, "status", "holder", "--json")
    assert json.loads(status.stdout)["runner"] == "stopped"  # the killed run, to resume by hand
    alone = Proc(tmp_path, repo, "alone", 0.1, "run", "--request", "x", "--no-wait", "--gates", "stop")
    assert alone.result()["status"] == "awaiting_merge"  # no dead holder nor waiter is left in the way


def test_a_team_of_concurrency_2_runs_two_at_once_and_the_third_waits(tmp_path: Path) -> None:
    repo = team_repo(tmp_path, concurrency=2)
    one = Proc(tmp_path, repo, "one", 120)
    one.wait_mission()
    two = Proc(tmp_path, repo, "two", 120)
    two.wait_mission()  # both hold a place at once
    three = Proc(tmp_path, repo, "three", 0.1)
    three.wait_said("team core runs 2 run(s) at once (running: pid")
    one.release()
    two.release()
    runs = [one.result(), two.result(), three.result()]
    assert "in line" not in one.stderr() + two.stderr()
    assert min(runs[0]["updated_at"], runs[1]["updated_at"]) <= runs[2]["created_at"]


def test_a_run_at_a_gate_holds_no_place_and_the_command_that_continues_it_waits(tmp_path: Path) -> None:
    # a place is held by a process driving a run: a run waiting at a gate has none, its `approve` waits for one
    repo = team_repo(tmp_path)
    gated = Proc(tmp_path, repo, "gated", 0, "run", "gated", "--request", "g", "--run-id", "gated", "--gates", "stop")
    assert gated.result()["status"] == "gate_wait"
    busy = Proc(tmp_path, repo, "busy", 120)
    busy.wait_mission()
    approve = Proc(tmp_path, repo, "approve", 0, "approve", "gated", "--gates", "stop")
    approve.wait_said("waiting, number 1 in line")
    busy.release()
    ended, approved = busy.result(), approve.result()
    assert approved["status"] == "awaiting_merge" and ended["updated_at"] <= approved["updated_at"]


@pytest.mark.parametrize("concurrency", [None, 1])
def test_a_local_file_s_team_queues_by_its_concurrency(tmp_path: Path, concurrency: int | None) -> None:
    # the local format's `concurrency:` limits its one team; left out, no limit (as before)
    repo = team_repo(tmp_path)
    (repo / ".github" / "interlock.yml").unlink()
    local = tmp_path / "local.yml"
    local.write_text(f"agent: {json.dumps(AGENT)}\n" + (f"concurrency: {concurrency}\n" if concurrency else ""))
    graph = str(repo / "graphs" / "slow.json")
    first = Proc(tmp_path, repo, "first", 120, "run", graph, "--request", "a", "--config", str(local))
    first.wait_mission()
    second = interlock(repo, "run", graph, "--request", "b", "--config", str(local), "--no-wait", "--json")
    first.release()
    first.result()
    if concurrency is None:
        assert second.returncode == 0, second.stderr
    else:
        assert second.returncode == 2 and "team default already runs 1 run(s) at once" in second.stderr
