"""The advisor's job (SPEC E4): `interlock step` for an advisor's order runs the advisor the order names — the
repository's `advisor:`, written by the service — never the job's mission agent, within the job's timeout,
and pushes nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.engine.effects import AskAdvisor
from app.engine.events import MissionFinished, Start
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus
from app.engine.step import step
from app.runner.orders import mission_order
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, encode_json, encode_record, order_path, record_path
from tests.helpers import edge, graph, node
from tests.runner.test_job import BRANCH, RUN, git, state_file

ADVISOR = r"""
import os, pathlib, sys, time
question = sys.stdin.read()
pathlib.Path(os.environ["SEEN"]).write_text(question)
pathlib.Path("advisor-scribble.txt").write_text("not for the branch")
if sys.argv[1] == "slow":
    time.sleep(30)
print("revise\nSplit the change in two.")
"""
MISSION_AGENT = "import pathlib, sys; sys.stdin.read(); pathlib.Path('mission-agent-ran').write_text('x')"


def seed_advisor_order(tmp_path: Path, advisor: str | None) -> Path:
    """A bare origin whose run waits for the advisor (mission 2) after its first mission failed, with the order
    the service writes for it."""
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "develop", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(seed)], check=True, capture_output=True)
    remote = Remote(seed)
    (seed / "README.md").write_text("# demo\n")
    remote.git("add", "README.md")
    remote.git("commit", "--quiet", "-m", "initial")
    remote.git("commit", "--quiet", "--allow-empty", "-m", "interlock: start")
    remote.git("push", "--quiet", "origin", "HEAD~1:refs/heads/develop", f"HEAD:refs/heads/{BRANCH}")
    g = parse_graph(graph([node("build")], [edge("build", "PASS", "__end__")], entry="build"))
    at = datetime(2026, 11, 30, tzinfo=UTC)
    run, _ = step(None, Start(key="s", at=at, run_id=RUN, title="Add hello", advisor=True), g)
    failed = MissionFinished(key="m1", at=at, seq=1, status=MissionStatus.FAILED, answer="Traceback: disk full")
    run, effects = step(run, failed, g)
    ask = next(e for e in effects if isinstance(e, AskAdvisor))
    files = {
        record_path(RUN): encode_record(run),
        order_path(RUN, ask.seq, ask.stage): encode_json(mission_order(ask, advisor)),
    }
    remote.add_files(STATE_BRANCH, files, "interlock: the advisor is asked")
    return bare


def advisor_job(tmp_path: Path, advisor: str | None, timeout: str = "60") -> tuple[dict[str, object], float]:
    origin = seed_advisor_order(tmp_path, advisor)
    checkout = tmp_path / "job"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "question.md")}
    env["INTERLOCK_AGENT_ENV"] = "SEEN"  # the test advisor's own setting: an agent in a job gets what is listed
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "2"]
    argv += ["--agent", f'command:{sys.executable} -c "{MISSION_AGENT}"', "--workdir", str(checkout)]
    began = time.monotonic()
    result = subprocess.run([*argv, "--timeout", timeout], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert git(origin, "log", "-1", "--format=%s", BRANCH) == "interlock: start"  # nothing pushed
    assert not (checkout / "mission-agent-ran").exists()  # the job's mission agent never answers an advisor order
    record = state_file(origin, f"runs/{RUN}/missions/0002-build.json")
    return record, time.monotonic() - began


@pytest.fixture
def advisor_script(tmp_path: Path) -> Path:
    script = tmp_path / "advisor.py"
    script.write_text(ADVISOR)
    return script


def test_the_job_runs_the_advisor_its_order_names(tmp_path: Path, advisor_script: Path) -> None:
    # SPEC E4, GH3
    record, _ = advisor_job(tmp_path, f"command:{sys.executable} {advisor_script} answer")
    assert (record["kind"], record["status"], record["commits"]) == ("advisor", "done", 0)
    assert record["answer"] == "revise\nSplit the change in two.\n"
    question = (tmp_path / "question.md").read_text()
    assert "Traceback: disk full" in question and "retry, revise or escalate" in question


def test_a_slow_advisor_is_stopped_at_the_jobs_timeout(tmp_path: Path, advisor_script: Path) -> None:
    # SPEC E4: on GitHub the advisor has the job's own timeout (the action's `timeout` input)
    record, took = advisor_job(tmp_path, f"command:{sys.executable} {advisor_script} slow", timeout="1")
    assert record["status"] == "timeout" and took < 20


def test_an_order_without_an_advisor_is_a_failed_call(tmp_path: Path) -> None:
    # SPEC E4: the key was removed after the run started: no advice, the default stands
    record, _ = advisor_job(tmp_path, None)
    assert record["status"] == "failed" and "No advisor is configured" in record["answer"]
