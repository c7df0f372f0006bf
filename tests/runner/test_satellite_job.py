"""Satellite repositories in a mission's job (SPEC P4, U7): real bare repositories side by side, the way GitHub
lays them out (``<host>/<owner>/<name>``), and ``interlock step`` in a real process.

The main repository is ``me/origin.git``; its run's team declares ``octo/docs``, at ``octo/docs.git`` beside it.
The agent finds the satellite's checkout in its prompt and writes there."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.engine.events import GitState
from app.engine.graph.validate import parse_graph
from app.engine.record import Run
from app.engine.step import step
from app.runner.outcomes import mission_event
from app.runner.remote import Remote
from app.runner.satellites import satellite_url
from app.store.journal import STATE_BRANCH, encode_record, record_path
from tests.helpers import edge, graph, node
from tests.runner.test_job import BRANCH, PUSH_TOKEN, READ_TOKEN, RUN, git, phase, seed_origin, state_file

SATELLITE = "octo/docs"
RECORD = "runs/issue-7/missions/0001-build.json"

AGENT = r"""
import os, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path(os.environ["SEEN"]).write_text(prompt)
mode = os.environ.get("MODE", "satellite")
where = next(line.split(": ", 1)[1] for line in prompt.splitlines() if line.startswith("- octo/docs: "))
if mode == "main":
    pathlib.Path("main.txt").write_text("main\n")
elif mode == "workflow":
    pathlib.Path(where, ".github/workflows").mkdir(parents=True)
    pathlib.Path(where, ".github/workflows/steal.yml").write_text("on: push\n")
elif mode != "nothing":
    pathlib.Path(where, "guide.md").write_text("# the new guide\n")
print("Wrote the guide.\nVERDICT: PASS")
"""


def seed_satellite(tmp_path: Path, repo: str = SATELLITE, run_branch: bool = True) -> Path:
    """A bare satellite with `main` and, as the service makes it at the run's start, the run branch."""
    bare = tmp_path / f"{repo}.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / f"seed-{repo.replace('/', '-')}"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(seed)], check=True, capture_output=True)
    (seed / "README.md").write_text("# docs\n")
    remote = Remote(seed)
    remote.git("add", "README.md")
    remote.git("commit", "--quiet", "-m", "docs")
    remote.git("push", "--quiet", "origin", "HEAD:refs/heads/main")
    if run_branch:
        remote.git("push", "--quiet", "origin", f"HEAD:refs/heads/{BRANCH}")
    return bare


def seed_main(tmp_path: Path, satellites: list[str]) -> Path:
    """The main repository (``me/origin.git``) whose run names ``satellites``, its build node ``requiresChanges``."""
    origin = seed_origin(tmp_path / "me", nodes=[node("build", requiresChanges=True), node("review", "review")])
    seed = tmp_path / "me" / "seed"
    raw = subprocess.run(
        ["git", "--git-dir", str(origin), "show", f"{STATE_BRANCH}:{record_path(RUN)}"], check=True, capture_output=True
    ).stdout
    run = Run.from_journal(raw).but(satellites=satellites)
    Remote(seed).add_files(STATE_BRANCH, {record_path(RUN): encode_record(run)}, "interlock: satellites")
    return origin


def job(origin: Path, tmp_path: Path, mode: str = "satellite") -> subprocess.CompletedProcess[str]:
    checkout = tmp_path / "work" / "app"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GITHUB_TOKEN": PUSH_TOKEN,
        "SEEN": str(tmp_path / "seen"),
        "MODE": mode,
        "INTERLOCK_AGENT_ENV": "SEEN,MODE",
    }
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "1"]
    argv += ["--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    return seed_main(tmp_path, [SATELLITE]), seed_satellite(tmp_path)


def test_a_satellite_is_checked_out_beside_the_main_one_and_its_commit_pushed_to_its_run_branch(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    # SPEC U7: the mission sees the satellite, the runner commits and pushes it to its own run branch
    origin, docs = world
    main_head = git(origin, "rev-parse", BRANCH)
    docs_before = git(docs, "rev-parse", BRANCH)
    result = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    prompt = (tmp_path / "seen").read_text()
    assert f"- octo/docs: {tmp_path / 'work' / 'interlock-satellites' / 'octo' / 'docs'}" in prompt
    assert git(docs, "show", f"{BRANCH}:guide.md") == "# the new guide"
    assert git(docs, "rev-parse", "main") == docs_before  # only the run branch moves
    assert git(docs, "log", "-1", "--format=%an|%s", BRANCH).startswith("Interlock|interlock(issue-7): build")
    assert git(origin, "rev-parse", BRANCH) == main_head  # nothing changed in the main repository
    record = state_file(origin, RECORD)
    after = git(docs, "rev-parse", BRANCH)
    assert record["commits"] == 0 and record["status"] == "done"
    assert record["satellites"] == {SATELLITE: {"base": docs_before, "head": after, "commits": 1}}


def test_a_commit_in_a_satellite_alone_is_progress_for_requires_changes(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    # SPEC P4: a node with requiresChanges accepts a new commit on one of the team's satellites
    origin, _ = world
    assert job(origin, tmp_path).returncode == 0
    raw = subprocess.run(
        ["git", "--git-dir", str(origin), "show", f"{STATE_BRANCH}:{record_path(RUN)}"], check=True, capture_output=True
    ).stdout
    run = Run.from_journal(raw)
    g = parse_graph(
        graph(
            [node("build", requiresChanges=True), node("review", "review")],
            [edge("build", "PASS", "review")],
            entry="build",
        )
    )
    event = mission_event(state_file(origin, RECORD), "job-1", datetime(2026, 12, 1, tzinfo=UTC), 1, GitState())
    assert event.commits == 1
    after, _ = step(run, event, g)
    assert after.stage == "review" and after.visits.get("build") == 1


def test_a_mission_that_changes_nothing_anywhere_records_no_progress(world: tuple[Path, Path], tmp_path: Path) -> None:
    # SPEC P4: nothing new on the run branch nor on a satellite is no progress
    origin, docs = world
    before = git(docs, "rev-parse", BRANCH)
    assert job(origin, tmp_path, mode="nothing").returncode == 0
    record = state_file(origin, RECORD)
    assert record["satellites"] == {SATELLITE: {"base": before, "head": before, "commits": 0}}
    assert mission_event(record, "k", datetime(2026, 12, 1, tzinfo=UTC), 1).commits == 0


def test_a_workflow_file_in_a_satellite_is_never_pushed(world: tuple[Path, Path], tmp_path: Path) -> None:
    # a workflow runs with the satellite repository's secrets: the same rule as the main run branch
    origin, docs = world
    before = git(docs, "rev-parse", BRANCH)
    assert job(origin, tmp_path, mode="workflow").returncode == 0
    record = state_file(origin, RECORD)
    assert (
        record["status"] == "failed" and "changed workflow files" in record["answer"] and SATELLITE in record["answer"]
    )
    assert git(docs, "rev-parse", BRANCH) == before
    assert record["satellites"][SATELLITE]["commits"] == 0


def test_a_satellite_without_its_run_branch_stops_the_job_with_a_clear_error(tmp_path: Path) -> None:
    origin = seed_main(tmp_path, [SATELLITE])
    seed_satellite(tmp_path, run_branch=False)
    result = job(origin, tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"the satellite {SATELLITE} has no run branch `{BRANCH}`" in result.stderr
    assert state_file(origin, RECORD) is None


def test_work_and_deliver_jobs_hand_the_satellite_commits_over(world: tuple[Path, Path], tmp_path: Path) -> None:
    # SPEC GH2 with U7: the agent's job pushes nothing, the deliver job pushes the satellite's bundle
    origin, docs = world
    before = git(docs, "rev-parse", BRANCH)
    checkout = tmp_path / "work" / "app"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    (tmp_path / "agent.py").write_text(AGENT)
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SEEN": str(tmp_path / "seen"),
        "MODE": "satellite",
        "INTERLOCK_AGENT_ENV": "SEEN,MODE",
    }
    agent = f"command:{sys.executable} {tmp_path / 'agent.py'}"
    work = phase(
        origin, tmp_path, "work", {**base, "GITHUB_TOKEN": READ_TOKEN}, "--agent", agent, "--workdir", str(checkout)
    )
    assert work.returncode == 0, work.stderr
    assert git(docs, "rev-parse", BRANCH) == before  # nothing pushed by the agent's job
    deliver = phase(
        origin,
        tmp_path,
        "deliver",
        {**base, "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN},
        "--remote",
        str(origin),
        "--work-result",
        "success",
    )
    assert deliver.returncode == 0, deliver.stderr
    assert git(docs, "show", f"{BRANCH}:guide.md") == "# the new guide"
    assert state_file(origin, RECORD)["satellites"][SATELLITE]["commits"] == 1


def test_a_satellite_url_is_the_main_one_with_owner_and_name_replaced() -> None:
    assert satellite_url("https://github.com/me/app", "octo/docs") == "https://github.com/octo/docs"
    assert satellite_url("https://github.com/me/app.git/", "octo/docs") == "https://github.com/octo/docs.git"
    assert satellite_url("/srv/git/me/app.git", "octo/docs") == "/srv/git/octo/docs.git"


def test_a_satellite_whose_run_branch_moved_meanwhile_is_not_pushed(world: tuple[Path, Path], tmp_path: Path) -> None:
    # the same rule as the main run branch: only a fast-forward is pushed; the mission fails, for a person
    origin, docs = world
    checkout = tmp_path / "work" / "app"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    (tmp_path / "agent.py").write_text(AGENT)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "seen"), "MODE": "satellite"}
    base["INTERLOCK_AGENT_ENV"] = "SEEN,MODE"
    agent = f"command:{sys.executable} {tmp_path / 'agent.py'}"
    assert phase(origin, tmp_path, "work", base, "--agent", agent, "--workdir", str(checkout)).returncode == 0
    other = tmp_path / "someone"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(docs), str(other)], check=True)
    Remote(other).git("commit", "--quiet", "--allow-empty", "-m", "someone else's")
    Remote(other).git("push", "--quiet", "origin", f"HEAD:refs/heads/{BRANCH}")
    moved = git(docs, "rev-parse", BRANCH)
    deliver = phase(origin, tmp_path, "deliver", base, "--remote", str(origin), "--work-result", "success")
    assert deliver.returncode == 0, deliver.stderr
    record = state_file(origin, RECORD)
    assert record["status"] == "failed" and "do not fast-forward" in record["answer"] and SATELLITE in record["answer"]
    assert git(docs, "rev-parse", BRANCH) == moved and record["satellites"][SATELLITE]["commits"] == 0


def test_the_deliver_phase_pushes_satellites_with_the_push_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # README: satellites are pushed with the action's `token` (INTERLOCK_PUSH_TOKEN), at the satellite's own URL
    from app.agents.base import AgentOutcome
    from app.engine.record import MissionStatus
    from app.runner import satellites
    from app.runner.handoff import Handoff

    (tmp_path / satellites.HANDOFF_FILE).write_text(
        json.dumps([{"repo": SATELLITE, "base": "a" * 40, "head": "b" * 40}])
    )
    made: list[tuple[str | None, str, str]] = []

    class Seen(Remote):
        def __init__(self, workdir: Path, token: str | None = None, remote: str = "origin", partial: str = "") -> None:
            made.append((token, remote, partial))
            super().__init__(workdir, None, remote, partial)

    monkeypatch.setattr(satellites, "Remote", Seen)
    run = Run.from_journal(
        subprocess.run(
            ["git", "--git-dir", str(seed_main(tmp_path, [SATELLITE])), "show", f"{STATE_BRANCH}:{record_path(RUN)}"],
            capture_output=True,
        ).stdout
    )
    handed = Handoff(1, AgentOutcome(status=MissionStatus.DONE, answer="ok"), "c" * 40, None)
    pushed = lambda remote, branch, mine, bundle: (mine.outcome, 1)  # noqa: E731
    _, record = satellites.push_satellites(run, handed, tmp_path, "https://github.com/me/app", PUSH_TOKEN, pushed)
    assert made == [(PUSH_TOKEN, "https://github.com/octo/docs", "blob:none")]  # issue 27: a blobless scratch
    assert record[SATELLITE]["commits"] == 1
