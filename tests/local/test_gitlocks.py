"""Git lock files a killed runner left behind (issue 11, item 7): removed before the agent runs, or refused.

A kill -9 inside ``git commit`` leaves ``.git/worktrees/<run>/index.lock`` (or the branch's ``.lock``), and every
later commit of the run fails. The command that takes the run's lock is the only live process of the run, so
it removes them before anything runs or is charged; a lock it cannot remove stops it with the fix to type.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.local.gitops import GitProblem
from app.local.missions import now
from tests.helpers import ROOT
from tests.local.harness import AGENT, Bench
from tests.local.test_processes import GRAPH

FAILING = {"*": {"answer": "boom", "exit": 2}}  # the run fails first, with its worktree made
SCRIPT = {
    "work": {"answer": "did it", "write": {"src/work.txt": "work {mission}"}},
    "review": {"answer": "VERDICT: PASS"},
}


def failed_run(tmp_path: Path, monkeypatch: Any) -> tuple[Bench, str, list[Path]]:
    """A failed run with a stale lock planted on its worktree's index, its HEAD and its branch."""
    bench = Bench(tmp_path, FAILING, monkeypatch)
    run = bench.shell().start(parse_graph(GRAPH), "Edit a file", "", run_id="locked")
    assert run.status is Status.FAILED
    bench.script_file.write_text(json.dumps(SCRIPT))
    admin = Path(bench.repo.git_dir) / "worktrees" / "locked"
    locks = [admin / "index.lock", admin / "HEAD.lock", bench.folder / ".git" / "refs/heads/interlock/locked.lock"]
    for lock in locks:
        lock.write_text("")
    return bench, run.id, locks


def test_resume_removes_the_locks_a_dead_process_left_and_commits(tmp_path: Path, monkeypatch: Any) -> None:
    bench, run_id, locks = failed_run(tmp_path, monkeypatch)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    resumed = subprocess.run(
        [sys.executable, "-m", "app", "resume", run_id, "--repo", str(bench.folder), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert all(f"removed {lock}, a git lock left by a process that died" in resumed.stderr for lock in locks)
    final = json.loads(resumed.stdout)
    assert final["status"] == "awaiting_merge"
    assert [(m["stage"], m["status"]) for m in final["missions"]] == [
        ("work", "failed"),
        ("work", "done"),
        ("review", "done"),
    ]
    assert "work 2" in bench.show(f"interlock/{run_id}:src/work.txt")
    assert not any(lock.exists() for lock in locks)


def test_a_lock_that_cannot_be_removed_refuses_before_the_agent_runs(tmp_path: Path, monkeypatch: Any) -> None:
    bench, run_id, locks = failed_run(tmp_path, monkeypatch)
    shell = bench.shell()
    before = shell.store.load(run_id)
    unlink = Path.unlink

    def refuse(path: Path, missing_ok: bool = False) -> None:
        if path.name.endswith(".lock") and path in locks:
            raise PermissionError(13, "Permission denied")
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(GitProblem) as refused:
        shell.send(run_id, lambda r: ev.Resume(key=f"{r.id}/resume/{r.version}", at=now()))
    command = " ".join(str(lock) for lock in [locks[1], locks[0], locks[2]])  # HEAD.lock sorts first
    assert f"remove them with `rm -f {command}`, then run the command again" in str(refused.value)
    after = shell.store.load(run_id)
    assert after.version == before.version and after.ledger == before.ledger  # nothing applied, nothing charged
    assert sorted(bench.prompts()) == ["0001-work"]  # no agent ran
    assert AGENT in shell.config.agent
