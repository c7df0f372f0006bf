"""Local features of issue 13 hardened against a hostile user: the local team queues (app/local/queue.py,
app/local/teamrun.py), the commands that wait in them (app/cli/runs.py), and satellite repositories
(app/local/satellites.py). Each test failed before its fix
(tests/local/test_review_issue13_local.py held it as a strict xfail)."""

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
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.local.gitops import GitProblem
from app.local.missions import now
from app.local.queue import TeamFull, queue_folder, team_place
from app.store.journal import record_path
from tests.helpers import ROOT, doc
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


# SPEC U5 (a team runs at most `concurrency` runs at once): the place records the run's agent file; the next
# holder stops the agent a killed holder left running (app/local/leftovers.py) before its run starts
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


# SPEC U5: every held slot counts against `concurrency`, those above a lowered limit too
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


# SPEC U5: a team's queue is its own; the folder's name escapes the team's name injectively (`%XX`)
def test_two_teams_whose_names_differ_only_in_path_characters_have_their_own_places(tmp_path: Path) -> None:
    git = tmp_path / "git"
    # team `a/b` holds its one place; team `a_b` runs nothing: its one place is free
    with (
        team_place(queue_folder(git, "a/b"), "a/b", 1, quiet),
        team_place(queue_folder(git, "a_b"), "a_b", 1, quiet, wait=False) as number,
    ):
        assert number == 0
    assert queue_folder(git, "a/b").name == "a%2Fb"  # README 'Local queues'


# SPEC U5 / COMMON (no stuck runs): line.json is read only when it is a regular file, opened non-blocking
def test_a_fifo_line_file_does_not_hang_the_team_s_runs(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path / "git", "core")
    folder.mkdir(parents=True)
    os.mkfifo(folder / "line.json")
    assert take_place_in_child(folder) is not None, "`--no-wait` hung on the FIFO line.json"


# SPEC U5: a line damaged by hand is an empty line (each waiter joins again), nested too deep included
def test_a_damaged_line_file_is_read_as_an_empty_line(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path / "git", "core")
    folder.mkdir(parents=True)
    (folder / "line.json").write_text("[" * 100_000)
    with team_place(folder, "core", 1, quiet, wait=False) as number:
        assert number == 0


# COMMON (bad input gets a clear error): a queue file that is not a file is named, nothing started
def test_a_slot_file_that_is_a_folder_gets_a_clear_error(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path / "git", "core")
    (folder / "slot-0.lock").mkdir(parents=True)
    # the CLI prints an InterlockError as `error: ...`, exit 2
    with pytest.raises(InterlockError) as refused, team_place(folder, "core", 1, quiet, wait=False):
        pass
    assert "slot-0.lock" in str(refused.value)


# SPEC U5 / README 'Local queues': a run asking a person at the terminal gives its team's place up
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


# SPEC U5: a ticket of line.json is used as a file name only if it has the form Interlock writes
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


# SPEC H5 (a gate binds to what was reviewed): a command that waited in line is refused if the run moved on
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
    assert bob.process.returncode == 2 and "moved on while `approve` waited" in bob.stderr(), bob.stderr()
    status = json.loads(interlock(repo, "status", "R", "--json").stdout)
    assert (status["status"], status["stage"]) == ("gate_wait", "ship"), "Bob's approval of `draft` passed `ship`"


# ---------------------------------------------------------------- satellites (app/local/satellites.py)

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
    return Bench(tmp_path, script, monkeypatch, satellites=[satellite])


def branches(folder: Path) -> str:
    return subprocess.run(["git", "branch", "--list"], cwd=folder, capture_output=True, text=True).stdout


# SPEC U7: the run's own repository, named through its git folder, is no satellite
def test_the_run_s_own_git_folder_is_refused_as_a_satellite(tmp_path: Path, monkeypatch: Any) -> None:
    bench = satellite_bench(tmp_path, monkeypatch, ".git", {"build": WRITES})
    with pytest.raises(GitProblem, match="the run's own repository"):
        bench.shell().start(parse_graph(ONE_STEP), "t", "", run_id="r1")
    assert "interlock/r1" not in branches(bench.folder)


# SPEC U7: repositories compared by their common git folder: a linked worktree of the run's own is refused
# before anything is made
def test_a_linked_worktree_of_the_run_s_own_repository_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: Any
) -> None:
    bench = satellite_bench(tmp_path, monkeypatch, os.pardir + os.sep + "wt", {"build": WRITES})
    subprocess.run(["git", "worktree", "add", "-b", "side", str(tmp_path / "wt")], cwd=bench.folder, check=True)
    shell = bench.shell()
    with pytest.raises(GitProblem, match="the run's own repository"):
        shell.start(parse_graph(ONE_STEP), "t", "", run_id="r1")
    assert shell.store.read(record_path("r1")) is None


# SPEC U7 / COMMON (no stuck runs): a command that would drive a run whose satellite is gone is refused first
def test_a_satellite_deleted_mid_run_does_not_leave_the_run_running(tmp_path: Path, monkeypatch: Any) -> None:
    make_repo(tmp_path / "docs")
    ok = {"answer": "ok\nVERDICT: PASS"}
    bench = satellite_bench(tmp_path, monkeypatch, os.pardir + os.sep + "docs", {"build": ok, "check": ok})
    shell = bench.shell()
    assert shell.start(parse_graph(GATE_THEN_CHECK), "t", "", run_id="r1").status is Status.GATE_WAIT
    shutil.rmtree(tmp_path / "docs")
    with pytest.raises(GitProblem, match="is no longer a git repository; nothing was changed"):
        shell.send("r1", lambda r: GateApproved(key=f"r1/gate/{r.version}", at=now(), note=""))
    run = shell.store.load("r1")
    assert run.status is Status.GATE_WAIT, (run.stage, run.waiting)  # where it was: approve again once restored


# SPEC U7 / README 'The repository's file drives local runs too': `owner/name` is the folder `../name`
def test_the_repository_s_file_with_github_satellites_still_drives_a_local_run(tmp_path: Path) -> None:
    repo = team_repo(tmp_path)
    config = repo / ".github" / "interlock.yml"
    config.write_text(config.read_text() + "    satellites: [acme/docs]\n")
    make_repo(tmp_path / "docs")  # README: `owner/name` is the folder `../name` beside the repository
    done = Proc(tmp_path, repo, "sat", 0.1, "run", "--request", "x", "--run-id", "sat", "--gates", "stop")
    assert done.result()["status"] == "awaiting_merge"


# SPEC U7, P4: a satellite's run branch is claimed by the repository whose run made it
def test_runs_of_two_repositories_with_one_satellite_do_not_share_its_run_branch(
    tmp_path: Path, monkeypatch: Any
) -> None:
    docs = tmp_path / "docs"
    make_repo(docs)
    tree = docs / ".git" / "interlock" / "worktrees" / "r1"
    gated = {**ONE_STEP, "nodes": [{**ONE_STEP["nodes"][0], "humanGate": True}]}  # type: ignore[dict-item]
    up = os.pardir + os.sep
    for name in ("app", "api"):
        (tmp_path / name).mkdir()
        step = {"answer": "ok\nVERDICT: PASS", "write": {str(tree / f"from-{name}.md"): name}}
        bench = Bench(tmp_path / name, {"build": step}, monkeypatch, satellites=[up + up + "docs"])
        shell = bench.shell()
        if name == "app":
            assert shell.start(parse_graph(gated), name, "", run_id="r1").status is Status.GATE_WAIT
            continue
        with pytest.raises(GitProblem, match="already has a branch interlock/r1 of another run"):
            shell.start(parse_graph(gated), name, "", run_id="r1")
        assert shell.store.read(record_path("r1")) is None  # the second run started nothing
    landed = subprocess.run(["git", "ls-tree", "--name-only", "interlock/r1"], cwd=docs, capture_output=True, text=True)
    assert "from-app.md" in landed.stdout and "from-api.md" not in landed.stdout, landed.stdout


def test_the_readme_says_how_the_local_queue_treats_people_killed_runs_and_odd_files() -> None:
    # each sentence is checked by a test above: terminal gates, a moved-on run, a killed holder, names, files
    text = " ".join(doc("local/configuration.md", "github/satellites.md").split())
    for words in (
        "A run asking a person at the terminal (a gate, a question) gives its place up until the answer, then "
        "waits in line for one again.",
        "A command that waited applies to the run as it was when typed: if another command moved the run on "
        "meanwhile, it is refused (exit 2) and changes nothing.",
        "The run that takes the place of a killed one first stops the agent the killed one left running.",
        "In that folder's name, each character of the team's name other than an ASCII letter, a digit, `-` or `_` "
        "is written `%XX` (team `a/b` is `a%2Fb`);",
        "a file there that is not what Interlock keeps (a folder, a FIFO, damaged JSON) is named in a clear error "
        "or read as an empty line, never followed.",
    ):
        assert words in text, words


def test_the_readme_says_which_satellites_a_local_run_refuses() -> None:
    # each sentence is checked by a satellite test above (SPEC U7)
    text = " ".join(doc("local/configuration.md", "github/satellites.md").split())
    for words in (
        "A satellite that is the run's own repository (its git folder, a linked worktree of it) is refused before "
        "anything is made.",
        "A satellite's run branch belongs to the repository whose run made it: a run of another repository with the "
        "same run id is refused and starts nothing.",
        "While a satellite is gone, a command that would drive its run on (`approve`, `resume`...) is refused and "
        "changes nothing: restore it, or `interlock abandon` the run.",
    ):
        assert words in text, words
