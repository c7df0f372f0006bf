"""The runner as separate processes: kill -9 mid-mission then resume, and a stop from another terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers import ROOT
from tests.local.harness import AGENT, make_repo

GRAPH = {
    "name": "loop",
    "entry": "work",
    "nodes": [
        {"stage": "work", "capability": "coding", "requiresChanges": True},
        {"stage": "review", "capability": "review"},
    ],
    "edges": [
        {"from": "work", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
        {"from": "review", "verdict": "FAIL", "to": "work"},
    ],
}


def setup(tmp: Path, script: dict[str, Any]) -> tuple[Path, dict[str, str]]:
    repo = tmp / "repo"
    make_repo(repo)
    (tmp / "graph.json").write_text(json.dumps(GRAPH))
    (tmp / "script.json").write_text(json.dumps(script))
    env = {**os.environ, "SCRIPT": str(tmp / "script.json"), "LOG": str(tmp / "log"), "PYTHONPATH": str(ROOT)}
    return repo, env


def interlock(*args: str, env: dict[str, str], repo: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args, "--repo", str(repo)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


def start(tmp: Path, repo: Path, env: dict[str, str], run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "run",
            str(tmp / "graph.json"),
            "--request",
            "Work",
            "--agent",
            AGENT,
            "--repo",
            str(repo),
            "--run-id",
            run_id,
            "--gates",
            "stop",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def record(repo: Path, run_id: str) -> dict[str, Any]:
    shown = subprocess.run(
        ["git", "show", f"interlock/state:runs/{run_id}.json"], cwd=repo, capture_output=True, text=True, check=True
    )
    return json.loads(shown.stdout)


def test_kill_9_mid_mission_then_resume_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    # SPEC J3: the interrupted mission resumes first (kind resume); done work is neither lost nor redone
    work = {"answer": "did it", "write": {"w.txt": "work {mission}"}}
    repo, env = setup(
        tmp_path,
        {
            "work": work,
            "review:1:deliver": {"answer": "VERDICT: PASS", "sleep": 30},
            "review:1:resume": {"answer": "resumed\nVERDICT: PASS"},
        },
    )
    runner = start(tmp_path, repo, env, "crash")
    wait_for(tmp_path / "log" / "0002-review.started")
    os.killpg(runner.pid, signal.SIGKILL)  # the runner and its agent die at once, like a lost machine
    runner.wait(timeout=10)
    assert record(repo, "crash")["status"] == "running"
    # SPEC J1: the agent is the one recorded at the start, which the kill -9 did not lose
    resumed = interlock("resume", "crash", "--json", env=env, repo=repo)
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(resumed.stdout)
    assert final["status"] == "awaiting_merge"
    kinds = [(m["seq"], m["stage"], m["kind"], m["status"]) for m in final["missions"]]
    assert kinds == [
        (1, "work", "deliver", "done"),
        (2, "review", "deliver", "crashed"),
        (3, "review", "resume", "done"),
    ]
    commits = subprocess.run(
        ["git", "log", "--format=%s", "interlock/crash"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert sum("work mission" in line for line in commits) == 1
    assert sorted(p.name for p in (tmp_path / "log").glob("*.txt")) == [
        "0001-work.txt",
        "0002-review.txt",
        "0003-review.txt",
    ]


def released(tmp_path: Path) -> dict[str, object]:
    """A mission that runs until the test releases it (a minute at most), not for a fixed time a loaded machine
    may need all of before the stop is even asked."""
    return {"sleep": 60, "until": str(tmp_path / "release")}


def release(tmp_path: Path) -> None:
    (tmp_path / "release").write_text("go")


def test_stop_from_another_process_interrupts_at_the_next_check(tmp_path: Path) -> None:
    # SPEC J4: the running process sees the stop when its mission returns and leaves the run interrupted
    repo, env = setup(
        tmp_path,
        {
            "work": {"answer": "did it", "write": {"w.txt": "x"}, **released(tmp_path)},
            "review": {"answer": "VERDICT: PASS"},
        },
    )
    runner = start(tmp_path, repo, env, "stopme")
    wait_for(tmp_path / "log" / "0001-work.started")
    stopped = interlock("stop", "stopme", "--json", env=env, repo=repo)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["stop_requested"] is True
    release(tmp_path)  # the mission returns only after the stop was asked, however slow the machine
    _, err = runner.communicate(timeout=60)
    assert runner.returncode == 0, err
    final = record(repo, "stopme")
    assert final["status"] == "interrupted" and final["stage"] == "review" and final["reason"]["code"] == "stopped"
    assert [m["status"] for m in final["missions"]] == ["done"]
    assert not (tmp_path / "log" / "0002-review.txt").exists()
    resumed = interlock("resume", "stopme", "--json", env=env, repo=repo)
    assert json.loads(resumed.stdout)["status"] == "awaiting_merge"


def test_stop_from_another_process_during_the_last_mission_wins_over_the_end(tmp_path: Path) -> None:
    # SPEC J4: the last review passes, but the stop asked while it ran wins: interrupted before `__end__`, and
    # resuming goes to the end without running the review again
    repo, env = setup(
        tmp_path,
        {
            "work": {"answer": "did it", "write": {"w.txt": "x"}},
            "review": {"answer": "VERDICT: PASS", **released(tmp_path)},
        },
    )
    runner = start(tmp_path, repo, env, "stoplast")
    wait_for(tmp_path / "log" / "0002-review.started")
    stopped = interlock("stop", "stoplast", "--json", env=env, repo=repo)
    assert stopped.returncode == 0, stopped.stderr
    release(tmp_path)
    _, err = runner.communicate(timeout=60)
    assert runner.returncode == 0, err
    final = record(repo, "stoplast")
    assert final["status"] == "interrupted" and final["stage"] == "__end__" and final["reason"]["code"] == "stopped"
    assert [(m["stage"], m["status"], m["verdict"]) for m in final["missions"]][-1] == ("review", "done", "PASS")
    resumed = interlock("resume", "stoplast", "--agent", AGENT, "--json", env=env, repo=repo)
    assert resumed.returncode == 0, resumed.stderr
    after = json.loads(resumed.stdout)
    assert after["status"] == "awaiting_merge" and after["mission_count"] == 2
    assert sorted(p.name for p in (tmp_path / "log").glob("*.txt")) == ["0001-work.txt", "0002-review.txt"]


def alive(pid: int) -> bool:
    from app.local.leftovers import started_at

    return started_at(pid) is not None


def test_an_agent_left_running_by_a_killed_runner_is_stopped_before_the_run_goes_on(tmp_path: Path) -> None:
    # SPEC J3: kill -9 of the runner alone leaves its agent running (it has a process group of its own);
    # the next process that drives the run stops it, so two agents never work in one worktree
    repo, env = setup(
        tmp_path,
        {
            "work": {"answer": "did it", "write": {"w.txt": "w"}},
            "review:1:deliver": {"answer": "VERDICT: PASS", "sleep": 60},
            "review:1:resume": {"answer": "VERDICT: PASS"},
        },
    )
    runner = start(tmp_path, repo, env, "orphan")
    wait_for(tmp_path / "log" / "0002-review.started")
    written = repo / ".git" / "interlock" / "locks" / "orphan.agent"
    wait_for(written)
    agent = int(written.read_text().split()[0])
    os.kill(runner.pid, signal.SIGKILL)  # the runner only: its agent lives on
    runner.wait(timeout=10)
    assert alive(agent)
    resumed = interlock("resume", "orphan", "--json", env=env, repo=repo)
    assert resumed.returncode == 0, resumed.stderr
    assert f"process group {agent}" in resumed.stderr
    deadline = time.monotonic() + 10
    while alive(agent):
        assert time.monotonic() < deadline, "the left-over agent still runs"
        time.sleep(0.05)
    assert json.loads(resumed.stdout)["status"] == "awaiting_merge"
    assert not written.exists()


def test_a_process_id_reused_by_another_process_is_never_killed(tmp_path: Path) -> None:
    # the written start time must match: a pid reused after the agent ended belongs to someone else
    from app.local.leftovers import remember, stop_leftover

    bystander = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        path = tmp_path / "run.agent"
        path.write_text(f"{bystander.pid} 1\n")  # same id, another start time
        assert stop_leftover(path) is None and bystander.poll() is None and not path.exists()
        remember(path, bystander.pid)
        assert stop_leftover(path) == bystander.pid
        assert bystander.wait(timeout=10) == -signal.SIGKILL
    finally:
        if bystander.poll() is None:
            bystander.kill()
