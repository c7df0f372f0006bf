"""``interlock step`` as an Actions job runs it: a real process in a clone of a real bare repository.

The origin holds `develop`, the run branch and the state branch with the run record and the mission's
order, exactly as the service saves them; the agent is a small script following the agent protocol.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.engine.effects import DispatchMission
from app.engine.events import Start
from app.engine.step import step
from app.engine.validate import parse_graph
from app.runner.orders import mission_order
from app.runner.redact import MASK, Redactor
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, encode_json, encode_record, order_path, record_path
from tests.helpers import edge, graph, node

RUN = "issue-7"
BRANCH = f"interlock/{RUN}"
PUSH_TOKEN = "ghs_pushpushpushpushpushpush1234"
READ_TOKEN = "ghs_readreadreadreadreadread5678"
API_KEY = "sk-ant-secretsecretsecretsecret42"

AGENT = r"""
import json, os, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path(os.environ["SEEN"]).write_text(json.dumps({"env": dict(os.environ), "prompt": prompt}))
mode = os.environ.get("MODE", "work")
if mode == "crash":
    print("segfault-ish"); sys.exit(3)
if mode == "workflow":
    pathlib.Path(".github/workflows").mkdir(parents=True)
    pathlib.Path(".github/workflows/steal.yml").write_text("on: push\n")
if mode == "hook":
    hook = pathlib.Path(".git/hooks/post-commit")
    hook.write_text("#!/bin/sh\nenv > " + os.environ["SEEN"] + ".hook\n")
    hook.chmod(0o755)
if mode == "rewrite":
    import subprocess
    subprocess.run(["git", "reset", "--quiet", "--hard", "HEAD~1"], check=True)
pathlib.Path("hello.txt").write_text("hello\n")
if mode == "leak":
    print("I found " + os.environ.get("ANTHROPIC_API_KEY", "") + " and ghp_abcdefghijklmnopqrstuvwxyz0123")
print("Added hello.txt\nVERDICT: PASS")
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def seed_origin(tmp_path: Path, nodes: list[dict[str, Any]] | None = None, stop: bool = False) -> Path:
    """A bare origin with `develop`, the run branch (an empty start commit) and the state branch holding the
    run record and the first mission's order, as the service saves them."""
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "develop", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(seed)], check=True, capture_output=True)
    remote = Remote(seed)
    (seed / "README.md").write_text("# demo\n")
    remote.git("add", "README.md")
    remote.git("commit", "--quiet", "-m", "initial")
    remote.git("push", "--quiet", "origin", "HEAD:refs/heads/develop")
    remote.git("commit", "--quiet", "--allow-empty", "-m", "interlock: start")
    remote.git("push", "--quiet", "origin", f"HEAD:refs/heads/{BRANCH}")
    nodes = nodes or [node("build"), node("review", "review")]
    g = parse_graph(graph(nodes, [edge("build", "PASS", "review")], entry="build"))
    start = Start(key="s", at=datetime(2026, 11, 30, tzinfo=UTC), run_id=RUN, title="Add hello", body="Say hi.")
    run, effects = step(None, start, g)
    dispatch = next(e for e in effects if isinstance(e, DispatchMission))
    files = {
        record_path(RUN): encode_record(run.but(stop_requested=stop)),
        order_path(RUN, dispatch.seq, dispatch.stage): encode_json(mission_order(dispatch)),
    }
    remote.add_files(STATE_BRANCH, files, "interlock: start run")
    return bare


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return seed_origin(tmp_path)


def job(
    origin: Path, tmp_path: Path, mission: int = 1, mode: str = "work"
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A job: clone on the run branch (as actions/checkout does), then `interlock step` in a new process."""
    checkout = tmp_path / f"job-{mission}-{mode}"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN,
        "GITHUB_TOKEN": PUSH_TOKEN,
        "INTERLOCK_READ_TOKEN": READ_TOKEN,
        "ANTHROPIC_API_KEY": API_KEY,
        "ACTIONS_RUNTIME_TOKEN": "runtime-secret-value",
        "SEEN": str(tmp_path / "seen.json"),
        "MODE": mode,
    }
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", str(mission)]
    argv += ["--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120), checkout


def state_file(origin: Path, path: str) -> Any:
    raw = subprocess.run(["git", "--git-dir", str(origin), "show", f"{STATE_BRANCH}:{path}"], capture_output=True)
    return json.loads(raw.stdout) if raw.returncode == 0 else None


def test_the_job_commits_pushes_and_stores_the_mission_record(origin: Path, tmp_path: Path) -> None:
    # SPEC GH2, GH3: the runner commits and pushes the agent's work; the record is stored on the state branch
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record is not None
    fields = ("seq", "stage", "status", "answer", "commits", "usage", "exit_code", "duration_s", "agent", "model")
    assert set(fields) | {"session_id"} <= set(record)
    assert (record["seq"], record["stage"], record["status"], record["commits"]) == (1, "build", "done", 1)
    assert record["exit_code"] == 0 and record["duration_s"] > 0 and "VERDICT: PASS" in record["answer"]
    author, committer, subject = git(origin, "log", "-1", "--format=%an|%cn|%s", BRANCH).split("|")
    assert (author, committer) == ("Interlock", "Interlock") and subject.startswith("interlock(issue-7): build")
    assert git(origin, "show", f"{BRANCH}:hello.txt") == "hello"


def test_the_agent_gets_the_read_token_and_never_the_write_token(origin: Path, tmp_path: Path) -> None:
    # SPEC GH2: agents never push; the write token never reaches the agent, nor the checkout's config
    result, checkout = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["env"]["GITHUB_TOKEN"] == READ_TOKEN and seen["env"]["GH_TOKEN"] == READ_TOKEN
    assert PUSH_TOKEN not in json.dumps(seen["env"]) and "ACTIONS_RUNTIME_TOKEN" not in seen["env"]
    assert PUSH_TOKEN not in (checkout / ".git" / "config").read_text()
    assert "# Interlock mission #1" in seen["prompt"] and "Say hi." in seen["prompt"]


def test_secrets_are_redacted_from_the_record_and_the_log(origin: Path, tmp_path: Path) -> None:
    result, _ = job(origin, tmp_path, mode="leak")
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert API_KEY not in json.dumps(record) and "ghp_abcdefghijklmnopqrstuvwxyz0123" not in json.dumps(record)
    assert record["answer"].count(MASK) == 2
    assert API_KEY not in result.stdout + result.stderr


def test_a_crashing_agent_is_recorded_as_failed(origin: Path, tmp_path: Path) -> None:
    # SPEC E1: the record says the mission did not end done; the service routes on it
    result, _ = job(origin, tmp_path, mode="crash")
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "failed" and record["exit_code"] == 3 and record["commits"] == 0


def test_a_job_for_a_mission_the_run_no_longer_awaits_stores_nothing(origin: Path, tmp_path: Path) -> None:
    result, _ = job(origin, tmp_path, mission=5)
    assert result.returncode == 0 and "no longer waits for mission 5" in result.stdout
    assert state_file(origin, "runs/issue-7/missions/0005-build.json") is None


def test_a_repository_without_a_state_branch_is_a_clear_error(origin: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "--git-dir", str(origin), "branch", "-D", STATE_BRANCH], check=True, capture_output=True)
    result, _ = job(origin, tmp_path)
    assert result.returncode != 0 and "no `interlock/state` branch" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_record_push_is_a_compare_and_swap(origin: Path, tmp_path: Path) -> None:
    # SPEC J2: a writer that moved the state branch meanwhile makes the push fail; the commit is rebuilt
    first, second = tmp_path / "one", tmp_path / "two"
    for folder in (first, second):
        subprocess.run(["git", "clone", "--quiet", str(origin), str(folder)], check=True)
    one, two = Remote(first), Remote(second)
    stale = one.fetch(STATE_BRANCH)
    two.add_files(STATE_BRANCH, {"runs/other.json": b"{}\n"}, "another writer")
    commit = one._commit_on(stale, {"runs/mine.json": b"{}\n"}, "built on a stale head")
    assert one.push(commit, STATE_BRANCH) is False
    one.add_files(STATE_BRANCH, {"runs/mine.json": b"{}\n"}, "rebuilt on the new head")
    names = git(origin, "ls-tree", "--name-only", f"{STATE_BRANCH}:runs")
    assert {"other.json", "mine.json", "issue-7.json"} <= set(names.splitlines())


def test_the_redactor_masks_secret_values_and_known_shapes() -> None:
    redactor = Redactor({"MY_API_KEY": "abcd1234efgh", "HOME": "/home/someone", "SHORT_TOKEN": "1"})
    text = "key abcd1234efgh, home /home/someone, github_pat_ABCDEFGHIJKLMNOPQRSTUV_123 and 1"
    assert redactor.text(text) == f"key {MASK}, home /home/someone, {MASK} and 1"
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    assert redactor.data({"a": [key, 3]}) == {"a": [MASK, 3]}


def test_a_stop_requested_before_the_job_began_is_recorded_as_skipped(tmp_path: Path) -> None:
    # SPEC J4: checked before the mission starts; the agent never runs
    origin = seed_origin(tmp_path, stop=True)
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json")["status"] == "skipped"
    assert not (tmp_path / "seen.json").exists()


def test_a_check_node_runs_its_command_in_the_job(tmp_path: Path) -> None:
    # SPEC V7: the command's exit code is the verdict; no agent
    origin = seed_origin(tmp_path, nodes=[node("build", check="test -f README.md"), node("review", "review")])
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert (record["kind"], record["exit_code"], record["agent"]) == ("check", 0, "check")
    assert "$ test -f README.md" in record["answer"] and not (tmp_path / "seen.json").exists()


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("rewrite", "do not fast-forward the run branch"),  # SPEC GH2: fast-forwards only
        ("workflow", "changed workflow files"),  # a workflow runs with the repository's secrets
    ],
)
def test_commits_that_must_not_land_are_never_pushed(origin: Path, tmp_path: Path, mode: str, why: str) -> None:
    # the mission fails, nothing is pushed, and a person decides
    head = git(origin, "rev-parse", BRANCH)
    result, _ = job(origin, tmp_path, mode=mode)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "failed" and why in record["answer"]
    assert git(origin, "rev-parse", BRANCH) == head


def test_hooks_the_agent_leaves_never_run(origin: Path, tmp_path: Path) -> None:
    # the commit and the push run git with hooks off: a hook would run with Interlock's token
    result, _ = job(origin, tmp_path, mode="hook")
    assert result.returncode == 0, result.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json")["commits"] == 1
    assert not (tmp_path / "seen.json.hook").exists()


def test_the_answer_is_folded_into_the_job_log_with_workflow_commands_off(origin: Path, tmp_path: Path) -> None:
    result, _ = job(origin, tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0] == "::group::Answer of mission 1" and lines[1].startswith("::stop-commands::")
    marker = lines[1].removeprefix("::stop-commands::")
    assert len(marker) == 32 and lines[2:4] == ["Added hello.txt", "VERDICT: PASS"]
    assert lines[4:6] == [f"::{marker}::", "::endgroup::"] and "1 commit(s) pushed" in lines[6]


def phase(
    origin: Path, tmp_path: Path, name: str, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "1"]
    argv += ["--phase", name, "--handoff", str(tmp_path / "handoff"), *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_work_and_deliver_run_as_two_jobs(origin: Path, tmp_path: Path) -> None:
    # SPEC GH2: the agent's job holds only a read token; the pushing job never works in the agent's checkout
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "seen.json"), "MODE": "work"}
    work_env = {**base, "GITHUB_TOKEN": READ_TOKEN}  # the work job's token is read-only
    work = phase(
        origin, tmp_path, "work", work_env, "--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout)
    )
    assert work.returncode == 0, work.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json") is None  # nothing written yet
    assert git(origin, "log", "-1", "--format=%s", BRANCH) == "interlock: start"
    handed = json.loads((tmp_path / "handoff" / "outcome.json").read_text())
    assert handed["status"] == "done" and (tmp_path / "handoff" / "work.bundle").exists()
    deliver_env = {**base, "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
    deliver = phase(origin, tmp_path, "deliver", deliver_env, "--remote", str(origin), "--work-result", "success")
    assert deliver.returncode == 0, deliver.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert (record["status"], record["commits"]) == ("done", 1)
    assert git(origin, "show", f"{BRANCH}:hello.txt") == "hello"


def test_a_work_job_that_handed_nothing_over_is_a_crashed_mission(origin: Path, tmp_path: Path) -> None:
    # SPEC E1: the deliver job still stores a record, saying how the work job ended
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
    deliver = phase(origin, tmp_path, "deliver", env, "--remote", str(origin), "--work-result", "cancelled")
    assert deliver.returncode == 0, deliver.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "crashed" and "ended cancelled without handing over" in record["answer"]


def test_deliver_needs_a_remote_url_and_a_handoff(origin: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = phase(origin, tmp_path, "deliver", env)
    assert result.returncode == 2 and "--phase deliver needs --remote URL" in result.stderr
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "1"]
    result = subprocess.run([*argv, "--phase", "dance"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2 and "--phase must be one of all, work, deliver" in result.stderr
