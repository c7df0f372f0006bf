"""`status` and `board` as separate processes see them: a live runner, a dead one, questions, gates, a merge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from app.store.gitstore import GitStore
from tests.helpers import ROOT
from tests.local.harness import AGENT
from tests.local.test_processes import interlock, setup, start, wait_for
from tests.local.test_views import QUESTIONS

GATED = str(ROOT / "graphs" / "basics" / "quote-edit.json")


def test_status_tells_a_live_runner_from_one_killed_mid_mission(tmp_path: Path) -> None:
    # SPEC J3: the record still says running after kill -9; the lock tells who, if anyone, drives the run
    repo, env = setup(tmp_path, {"work": {"answer": "did it", "write": {"w.txt": "x"}, "sleep": 30}})
    runner = start(tmp_path, repo, env, "crash")
    try:
        wait_for(tmp_path / "log" / "0001-work.started")
        live = json.loads(interlock("status", "crash", "--json", env=env, repo=repo).stdout)
        assert (live["status"], live["runner"]) == ("running", f"live (pid {runner.pid})")
        board = json.loads(interlock("board", "--json", env=env, repo=repo).stdout)
        assert [(row["id"], row["runner"]) for row in board] == [("crash", f"live (pid {runner.pid})")]
    finally:
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its agent die at once, like a lost machine
        runner.wait(timeout=10)
    dead = json.loads(interlock("status", "crash", "--json", env=env, repo=repo).stdout)
    assert (dead["status"], dead["runner"]) == ("running", "stopped")
    text = interlock("status", "crash", env=env, repo=repo).stdout
    assert "  runner   stopped" in text and "next     the runner stopped; `interlock resume crash`" in text
    header, _, row = interlock("board", env=env, repo=repo).stdout.splitlines()
    cells = {name.strip(): cell.strip() for name, cell in zip(header.split("|"), row.split("|"), strict=True)}
    assert (cells["status"], cells["runner"]) == ("running", "stopped")


def test_run_and_status_show_every_question(tmp_path: Path) -> None:
    # SPEC V6: `run` prints the questions whole as they come; `status` shows them, `--json` as `questions`
    repo, env = setup(tmp_path, {"work": {"answer": f"{QUESTIONS}\nVERDICT: NEEDS_INPUT"}})
    graph = str(tmp_path / "graph.json")
    ran = interlock("run", graph, "--request", "Greet", "--agent", AGENT, "--run-id", "ask", env=env, repo=repo)
    assert ran.returncode == 0, ran.stderr
    assert all(line in ran.stderr for line in QUESTIONS.splitlines() if line)
    assert "    2. Which greeting?" in ran.stdout and "next     interlock answer ask --text T" in ran.stdout
    status = json.loads(interlock("status", "ask", "--json", env=env, repo=repo).stdout)
    assert (status["status"], status["questions"], status["runner"]) == ("awaiting_input", QUESTIONS, "none")


def test_status_at_a_gate_shows_the_answer_to_approve(tmp_path: Path) -> None:
    # SPEC H1: the status of a run at a gate shows what the gate asks to approve, and the full answer's command
    repo, env = setup(tmp_path, {"edit": {"answer": "Changed the quote.\nIt is kinder.", "write": {"q.txt": "hi"}}})
    ran = interlock("run", GATED, "--request", "Edit", "--agent", AGENT, "--run-id", "g", env=env, repo=repo)
    assert ran.returncode == 0, ran.stderr
    text = interlock("status", "g", env=env, repo=repo).stdout
    assert "    answer of mission #1 at edit:\n    Changed the quote.\n    It is kinder.\n" in text
    view = json.loads(interlock("status", "g", "--json", env=env, repo=repo).stdout)["gate_answer"]
    # layout v2: the command names the bucket the file lies in (app/store/layout.py)
    assert view["command"] == "git show interlock/state:runs/g/missions/0000/0001-edit.json" and view["lines"] == 2
    shown = subprocess.run(view["command"].split(), cwd=repo, capture_output=True, text=True, check=True).stdout
    assert json.loads(shown)["answer"].startswith("Changed the quote.")


def test_merging_the_run_branch_is_seen_by_status_and_board(tmp_path: Path) -> None:
    # SPEC GH6: merged into the base, the run is done the next time a command looks at it
    repo, env = setup(tmp_path, {"edit": {"answer": "ok", "write": {"q.txt": "hi"}}})
    for run_id in ("m1", "m2"):
        ran = interlock(
            "run", GATED, "--request", "Edit", "--agent", AGENT, "--run-id", run_id, "--gates", "approve",
            env=env, repo=repo,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    git = ["git", "-C", str(repo), "-c", "user.name=A Person", "-c", "user.email=a@example.org"]
    subprocess.run([*git, "checkout", "-q", "develop"], check=True)
    subprocess.run([*git, "merge", "-q", "--no-ff", "-m", "merge m1", "interlock/m1"], check=True)
    board = json.loads(interlock("board", "--json", env=env, repo=repo).stdout)
    assert [(row["id"], row["status"]) for row in board] == [("m1", "done"), ("m2", "awaiting_merge")]
    status = interlock("status", "m1", env=env, repo=repo)
    assert "status   done at __end__" in status.stdout and "nothing: the run is over" in status.stdout
    subprocess.run([*git, "merge", "-q", "--no-ff", "-m", "merge m2", "interlock/m2"], check=True)
    shown = interlock("status", "m2", env=env, repo=repo)
    assert "status   done" in shown.stdout and "interlock/m2 was merged into develop" in shown.stderr


@pytest.mark.parametrize("record", [b"[" * 100_000 + b"]" * 100_000, b"not json", b"[1, 2]", b'{"answer": 3}'])
def test_views_of_a_run_whose_mission_record_is_unreadable_say_so_and_never_exit_70(
    tmp_path: Path, record: bytes
) -> None:
    # issue 11, 10: the journal is a branch anyone with the repository (an agent too) can rewrite; a mission record
    # that is no JSON object (or one nested too deeply to read) ended `status` and `journey` with exit 70
    repo, env = setup(tmp_path, {"edit": {"answer": "Changed the quote.", "write": {"q.txt": "hi"}}})
    ran = interlock("run", GATED, "--request", "Edit", "--agent", AGENT, "--run-id", "g", env=env, repo=repo)
    assert ran.returncode == 0, ran.stderr
    store = GitStore(repo)
    run = store.load("g")
    store.save(run, run.version, {"runs/g/missions/0001-edit.json": record}, message="an unreadable record")
    for view in ("status", "journey"):
        shown = interlock(view, "g", env=env, repo=repo)
        assert shown.returncode == 0 and "internal error" not in shown.stderr, shown.stderr
    journey = json.loads(interlock("journey", "g", "--json", env=env, repo=repo).stdout)
    assert [(row["seq"], row["stage"]) for row in journey] == [(1, "edit")]  # the run's own summary still shows
