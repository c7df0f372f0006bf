"""Review of issue 13's local features (a hostile user's and a reviewer's attacks): `interlock run` driven by the
repository's `.github/interlock.yml` (app/local/repofile.py, app/local/teamrun.py) and the local team queues
(app/local/queue.py). Each test shows one defect and is marked xfail(strict=True) until it is fixed."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from app.engine.errors import InterlockError
from app.engine.events import GateApproved
from app.engine.record import Status
from app.engine.validate import parse_graph
from app.local.gitops import GitProblem
from app.local.missions import now
from app.store.journal import record_path
from tests.helpers import ROOT
from tests.local.harness import Bench, make_repo
from tests.local.test_team_queue import Proc, team_repo


def quiet(_: str) -> None:
    """The queue's messages, unread."""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def take_place_in_child(folder: Path, seconds: float = 5) -> subprocess.CompletedProcess[str] | None:
    """Take a place of team `core` (concurrency 1) in another process; ``None`` when it hangs."""
    code = textwrap.dedent(
        f"""
        from pathlib import Path
        from app.local.queue import team_place
        with team_place(Path({str(folder)!r}), "core", 1, print, wait=False):
            print("got a place")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        command = [sys.executable, "-c", code]
        return subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=seconds, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return None


# ---------------------------------------------------------------- satellites (branch i13-satellites)
# These run where app/local/satellites.py exists (after i13-satellites is merged); they are skipped before.

ONE_STEP = {
    "name": "one",
    "entry": "build",
    "nodes": [{"stage": "build", "capability": "coding", "requiresChanges": True, "maxVisits": 2}],
    "edges": [{"from": "build", "verdict": "PASS", "to": "__end__"}],
}
GATE_THEN_CHECK = {
    "name": "gate-then-check",
    "entry": "build",
    "nodes": [
        {"stage": "build", "capability": "coding", "humanGate": True},
        {"stage": "check", "capability": "review"},
    ],
    "edges": [
        {"from": "build", "verdict": "PASS", "to": "check"},
        {"from": "check", "verdict": "PASS", "to": "__end__"},
    ],
}
WRITES = {"answer": "ok\nVERDICT: PASS", "write": {"a.txt": "x"}}


def satellite_bench(tmp_path: Path, monkeypatch: Any, satellite: str, script: dict[str, Any]) -> Bench:
    pytest.importorskip("app.local.satellites")
    return Bench(tmp_path, script, monkeypatch, satellites=[satellite])


def branches(folder: Path) -> str:
    return subprocess.run(["git", "branch", "--list"], cwd=folder, capture_output=True, text=True).stdout


@pytest.mark.xfail(
    strict=True,
    reason="SPEC U7 / satellites.resolve ('the satellite is the run's own repository' is refused): `satellites: "
    "[.git]` names the run's own repository through its git folder and is taken as a satellite",
)
def test_the_run_s_own_git_folder_is_refused_as_a_satellite(tmp_path: Path, monkeypatch: Any) -> None:
    bench = satellite_bench(tmp_path, monkeypatch, ".git", {"build": WRITES})
    with pytest.raises(GitProblem, match="the run's own repository"):
        bench.shell().start(parse_graph(ONE_STEP), "t", "", run_id="r1")
    assert "interlock/r1" not in branches(bench.folder)


@pytest.mark.xfail(
    strict=True,
    reason="SPEC U7 / satellites.resolve ('refused before anything is made'): a linked worktree of the run's own "
    "repository passes the check (folders compared, not repositories); the first mission then dies on `git worktree` "
    "(GitFailed) and leaves a run record `running` that nobody drives",
)
def test_a_linked_worktree_of_the_run_s_own_repository_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: Any
) -> None:
    bench = satellite_bench(tmp_path, monkeypatch, os.pardir + os.sep + "wt", {"build": WRITES})
    subprocess.run(["git", "worktree", "add", "-b", "side", str(tmp_path / "wt")], cwd=bench.folder, check=True)
    shell = bench.shell()
    with pytest.raises(GitProblem, match="the run's own repository"):
        shell.start(parse_graph(ONE_STEP), "t", "", run_id="r1")
    assert shell.store.read(record_path("r1")) is None


@pytest.mark.xfail(
    strict=True,
    reason="COMMON (no stuck runs): a satellite deleted while a run waits at a gate makes `approve` raise GitProblem "
    "from check_out after the mission was dispatched: the run stays `running` at a mission that never ran, no reason",
)
def test_a_satellite_deleted_mid_run_does_not_leave_the_run_running(tmp_path: Path, monkeypatch: Any) -> None:
    pytest.importorskip("app.local.satellites")
    make_repo(tmp_path / "docs")
    ok = {"answer": "ok\nVERDICT: PASS"}
    bench = satellite_bench(tmp_path, monkeypatch, os.pardir + os.sep + "docs", {"build": ok, "check": ok})
    shell = bench.shell()
    assert shell.start(parse_graph(GATE_THEN_CHECK), "t", "", run_id="r1").status is Status.GATE_WAIT
    shutil.rmtree(tmp_path / "docs")
    with contextlib.suppress(InterlockError):  # a clear error is welcome; the run must not be left running
        shell.send("r1", lambda r: GateApproved(key=f"r1/gate/{r.version}", at=now(), note=""))
    run = shell.store.load("r1")
    assert run.status is not Status.RUNNING, (run.stage, run.waiting)


@pytest.mark.xfail(
    strict=True,
    reason="README 'a file that `interlock config check --file` accepts is one that `interlock run` runs' / issue 13 "
    "item 8: a team's GitHub `satellites: [owner/name]` are passed on as written (repofile.settings) and "
    "satellites.resolve refuses them as folders, so the repository's own file cannot drive any local run of the team",
)
def test_the_repository_s_file_with_github_satellites_still_drives_a_local_run(tmp_path: Path) -> None:
    pytest.importorskip("app.local.satellites")
    repo = team_repo(tmp_path)
    config = repo / ".github" / "interlock.yml"
    config.write_text(config.read_text() + "    satellites: [acme/docs]\n")
    done = Proc(tmp_path, repo, "sat", 0.1, "run", "--request", "x", "--run-id", "sat", "--gates", "stop")
    assert done.result()["status"] == "awaiting_merge"


@pytest.mark.xfail(
    strict=True,
    reason="SPEC U7 / P4 (the run's work on its own run branch): two repositories sharing a satellite, runs with the "
    "same --run-id: the second reuses the first's satellite branch and worktree (make_branches keeps a branch that "
    "exists), so its commits land on the other run's branch and are merged with it",
)
def test_runs_of_two_repositories_with_one_satellite_do_not_share_its_run_branch(
    tmp_path: Path, monkeypatch: Any
) -> None:
    pytest.importorskip("app.local.satellites")
    docs = tmp_path / "docs"
    make_repo(docs)
    tree = docs / ".git" / "interlock" / "worktrees" / "r1"
    gated = {**ONE_STEP, "nodes": [{**ONE_STEP["nodes"][0], "humanGate": True}]}  # type: ignore[dict-item]
    up = os.pardir + os.sep
    for name in ("app", "api"):
        (tmp_path / name).mkdir()
        step = {"answer": "ok\nVERDICT: PASS", "write": {str(tree / f"from-{name}.md"): name}}
        bench = Bench(tmp_path / name, {"build": step}, monkeypatch, satellites=[up + up + "docs"])
        with contextlib.suppress(InterlockError):  # a clear refusal of the second run is welcome too
            bench.shell().start(parse_graph(gated), name, "", run_id="r1")
    landed = subprocess.run(["git", "ls-tree", "--name-only", "interlock/r1"], cwd=docs, capture_output=True, text=True)
    assert "from-app.md" in landed.stdout and "from-api.md" not in landed.stdout, landed.stdout
