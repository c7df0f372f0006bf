"""Review of issue 13's local features (a hostile user's and a reviewer's attacks): `interlock run` driven by the
repository's `.github/interlock.yml` (app/local/repofile.py, app/local/teamrun.py) and the local team queues
(app/local/queue.py). Each test shows one defect and is marked xfail(strict=True) until it is fixed."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
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
from app.local.queue import TeamFull, queue_folder, team_place
from app.store.journal import record_path
from tests.helpers import ROOT
from tests.local.harness import Bench, make_repo
from tests.local.test_team_queue import Proc, interlock, team_repo


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


# ---------------------------------------------------------------- local queues (app/local/queue.py)


@pytest.mark.xfail(
    strict=True,
    reason="SPEC U5 / README 'Local queues' (kill -9 included): the killed holder's agent runs in a session of its "
    "own and is not stopped when the queue gives its place away, so two agents of a concurrency-1 team work at once",
)
def test_a_killed_holder_s_agent_is_stopped_before_the_next_run_of_the_team_starts(tmp_path: Path) -> None:
    # SPEC U5: a team runs at most `concurrency` runs at once; README: "starts when a run of the team ends,
    # however it ends, `kill -9` included"
    repo = team_repo(tmp_path)
    holder = Proc(tmp_path, repo, "holder", 60)
    holder.wait_mission()
    agent = int((holder.log / "0001-work.started").read_text())
    try:
        waiter = Proc(tmp_path, repo, "waiter", 0.1)
        waiter.wait_said("waiting, number 1 in line")
        holder.kill()  # kill -9 of the runner's whole process group
        assert waiter.result()["status"] == "awaiting_merge"
        assert not alive(agent), "the killed run's agent still works while the next run of the team ran"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent, signal.SIGKILL)


@pytest.mark.xfail(
    strict=True,
    reason="SPEC U5: after `concurrency` is lowered (2 -> 1) a new run takes the free slot-0 while a run holding "
    "slot-1 still runs: two runs at once in a team of concurrency 1 (queue.py _try_place looks only at slots < N)",
)
def test_a_lowered_concurrency_still_bounds_the_runs_at_once(tmp_path: Path) -> None:
    # SPEC U5: a team runs at most `concurrency` runs at once; here the file went from 2 to 1 while runs lived
    folder = queue_folder(tmp_path / "git", "core")
    first, second = team_place(folder, "core", 2, quiet), team_place(folder, "core", 2, quiet)
    assert (first.__enter__(), second.__enter__()) == (0, 1)
    first.__exit__(None, None, None)  # the run on slot-0 ended; the one on slot-1 still runs
    try:
        with pytest.raises(TeamFull), team_place(folder, "core", 1, quiet, wait=False):  # one run runs already
            pass
    finally:
        second.__exit__(None, None, None)


@pytest.mark.xfail(
    strict=True,
    reason="SPEC U5: team names differing only in path characters ('a/b', 'a_b', 'a b') share one queue folder "
    "(queue.py queue_folder), so one team's run takes or waits for another team's place",
)
def test_two_teams_whose_names_differ_only_in_path_characters_have_their_own_places(tmp_path: Path) -> None:
    git = tmp_path / "git"
    # team `a/b` holds its one place; team `a_b` runs nothing: its one place is free
    with (
        team_place(queue_folder(git, "a/b"), "a/b", 1, quiet),
        team_place(queue_folder(git, "a_b"), "a_b", 1, quiet, wait=False) as number,
    ):
        assert number == 0


@pytest.mark.xfail(
    strict=True,
    reason="README 'Local queues' / COMMON (no stuck runs): a FIFO at .git/interlock/queues/<team>/line.json makes "
    "every `interlock run` of the team block forever in _read_line (read_text on a FIFO), even with --no-wait",
)
def test_a_fifo_line_file_does_not_hang_the_team_s_runs(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path / "git", "core")
    folder.mkdir(parents=True)
    os.mkfifo(folder / "line.json")
    assert take_place_in_child(folder) is not None, "`--no-wait` hung on the FIFO line.json"


@pytest.mark.xfail(
    strict=True,
    reason="queue.py's promise 'damaged by hand: each waiter joins again': a deeply nested line.json raises "
    "RecursionError (not ValueError) in _read_line: 'internal error' instead of a run",
)
def test_a_damaged_line_file_is_read_as_an_empty_line(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path / "git", "core")
    folder.mkdir(parents=True)
    (folder / "line.json").write_text("[" * 100_000)
    with team_place(folder, "core", 1, quiet, wait=False) as number:
        assert number == 0


@pytest.mark.xfail(
    strict=True,
    reason="COMMON 'bad input gets a clear, specific error': a queue file that is a folder (slot-0.lock) makes "
    "`interlock run` die with 'internal error: IsADirectoryError' (queue.py _take) instead of naming the file",
)
def test_a_slot_file_that_is_a_folder_gets_a_clear_error(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path / "git", "core")
    (folder / "slot-0.lock").mkdir(parents=True)
    # the CLI prints an InterlockError as `error: ...`, exit 2
    with pytest.raises(InterlockError) as refused, team_place(folder, "core", 1, quiet, wait=False):
        pass
    assert "slot-0.lock" in str(refused.value)


@pytest.mark.xfail(
    strict=True,
    reason="README 'Local queues': 'a run stopped at a gate holds none' — on a terminal (gates `ask`, the default) "
    "the run waits for the person's answer inside team_turn, holding the team's place for as long as nobody answers",
)
def test_a_run_asking_a_person_at_a_gate_on_a_terminal_holds_no_place(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    (tmp_path / "asking.json").write_text('{"work": {"answer": "done"}}')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRIPT": str(tmp_path / "asking.json"), "LOG": str(tmp_path / "l")}
    leader, follower = pty.openpty()  # a terminal: gates left unchosen ask the person
    asking = subprocess.Popen(
        [sys.executable, "-m", "app", "run", "gated", "--request", "g", "--run-id", "asking", "--repo", str(repo)],
        env=env,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert asking.stderr is not None
        said = b""
        while b"gate open" not in said:  # the run is at its gate, the person not answering
            chunk = asking.stderr.read1(4096)
            assert chunk, said
            said += chunk
        other = Proc(tmp_path, repo, "other", 0.1, "run", "--request", "o", "--run-id", "other", "--no-wait")
        other.process.wait(timeout=60)
        assert other.process.returncode == 0, other.stderr()
    finally:
        os.killpg(asking.pid, signal.SIGKILL)
        asking.wait(timeout=10)
        os.close(leader)
        os.close(follower)


@pytest.mark.xfail(
    strict=True,
    reason="queue.py _live: a damaged line.json entry's ticket is joined into a path unchecked and the file unlinked, "
    'so `{"ticket": "../../../../index"}` deletes the repository\'s .git/index.lock held by a running git command',
)
def test_a_damaged_line_file_deletes_nothing_outside_the_queue_folder(tmp_path: Path) -> None:
    git = tmp_path / "git"
    folder = queue_folder(git, "core")
    folder.mkdir(parents=True)
    (git / "index.lock").write_text("")  # a `git commit` in progress holds this (git's own lock, not flock)
    (folder / "line.json").write_text('[{"ticket": "../../../../index", "pid": 1}]')
    with team_place(folder, "core", 1, quiet, wait=False):
        pass
    assert (git / "index.lock").exists()


TWO_GATES = {
    "name": "two-gates",
    "entry": "draft",
    "nodes": [
        {"stage": "draft", "capability": "coding", "humanGate": True},
        {"stage": "ship", "capability": "coding", "humanGate": True},
    ],
    "edges": [{"from": "draft", "verdict": "PASS", "to": "ship"}, {"from": "ship", "verdict": "PASS", "to": "__end__"}],
}


@pytest.mark.xfail(
    strict=True,
    reason="SPEC H (a gate passes by a person who saw it) / README 'the command that continues it waits': an `approve` "
    "typed at gate `draft` waits in line, then keys its approval on the run as it is when it gets a place "
    "(cli_runs.continue_run -> shell.send), so it passes gate `ship`, which nobody approved",
)
def test_an_approval_that_waited_in_line_does_not_pass_a_later_gate(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    (repo / "graphs" / "two-gates.json").write_text(json.dumps(TWO_GATES))
    first = Proc(tmp_path, repo, "R", 0, "run", "two-gates", "--request", "r", "--run-id", "R", "--gates", "stop")
    assert first.result()["stage"] == "draft"
    busy = team_place(queue_folder(repo / ".git", "core"), "core", 1, quiet)  # a run of the team holds the place
    busy.__enter__()
    alice = Proc(tmp_path, repo, "alice", 0, "approve", "R", "--gates", "stop")
    alice.wait_said("waiting, number 1 in line")
    bob = Proc(tmp_path, repo, "bob", 0, "approve", "R", "--gates", "stop")  # both approve gate `draft`
    bob.wait_said("waiting, number 2 in line")
    busy.__exit__(None, None, None)
    assert alice.result()["stage"] == "ship"  # Alice's approval passed `draft`; the run waits at `ship`
    bob.process.communicate(timeout=60)
    bob.err.close()
    status = json.loads(interlock(repo, "status", "R", "--json").stdout)
    assert (status["status"], status["stage"]) == ("gate_wait", "ship"), "Bob's approval of `draft` passed `ship`"


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
