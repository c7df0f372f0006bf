"""The delivery's git state on GitHub (SPEC E2, U7; issue 13 item 7): the deliver phase of a mission's job
reads it with git, after it pushed, and keeps it in the mission record as ``git``; the service builds the
decision file's "Delivery" section from that record, for the main repository and each satellite.

Real bare repositories laid out as GitHub does (``me/origin.git`` and ``octo/docs.git``), ``interlock step`` in a
real process, and the engine's decision file rendered from the record the job stored."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.engine.decision import render_decision
from app.engine.events import GitState
from app.engine.record import Run
from app.runner.gitstate import delivered_state, read_state
from app.runner.outcomes import mission_event
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, record_path
from tests.engine.test_decision import passed_then_out_of_visits
from tests.runner.test_job import BRANCH, RUN, git, state_file
from tests.runner.test_satellite_job import RECORD, SATELLITE, job, seed_main, seed_satellite

AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    return seed_main(tmp_path, [SATELLITE]), seed_satellite(tmp_path)


def push_to(bare: Path, tmp_path: Path, branch: str, name: str, text: str) -> None:
    """Someone else's commit on ``branch`` of ``bare`` (a base that moved on while the run worked)."""
    clone = tmp_path / f"other-{bare.name}-{name}"
    subprocess.run(["git", "clone", "--quiet", "-b", branch, str(bare), str(clone)], check=True, capture_output=True)
    (clone / name).write_text(text)
    Remote(clone).git("add", name)
    Remote(clone).git("commit", "--quiet", "-m", f"someone's {name}")
    Remote(clone).git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")


def test_the_record_keeps_the_run_branch_state_with_its_conflicts(world: tuple[Path, Path], tmp_path: Path) -> None:
    # SPEC E2: head, commits ahead, files changed and conflicts with the base, read after the push
    origin, _ = world
    push_to(origin, tmp_path, "develop", "main.txt", "theirs\n")  # the base gained the same file meanwhile
    assert job(origin, tmp_path, mode="main").returncode == 0
    state = state_file(origin, RECORD)["git"]
    assert state["head"] == git(origin, "rev-parse", BRANCH)
    assert state["ahead"] == 2  # the empty start commit and the mission's
    assert state["files_changed"] == ["main.txt"] and state["conflicts"] == ["main.txt"]
    assert state["satellites"][SATELLITE] == {
        "head": git(tmp_path / f"{SATELLITE}.git", "rev-parse", BRANCH),
        "ahead": 0,
        "files_changed": [],
        "conflicts": [],
    }


def test_a_satellite_state_is_its_run_branch_against_its_default_branch(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    # SPEC U7: the decision file's git state covers every satellite
    origin, docs = world
    assert job(origin, tmp_path, mode="satellite").returncode == 0
    state = state_file(origin, RECORD)["git"]
    assert state["files_changed"] == [] and state["ahead"] == 1
    assert state["satellites"][SATELLITE] == {
        "head": git(docs, "rev-parse", BRANCH),
        "ahead": 1,
        "files_changed": ["guide.md"],
        "conflicts": [],
    }


def test_the_decision_file_on_github_shows_the_state_the_job_stored(world: tuple[Path, Path], tmp_path: Path) -> None:
    # SPEC E2, U7: the service reads the state from the record; no "git state not available" any more
    origin, docs = world
    push_to(docs, tmp_path, "main", "guide.md", "# their guide\n")  # a conflict in the satellite only
    assert job(origin, tmp_path, mode="satellite").returncode == 0
    event = mission_event(state_file(origin, RECORD), "job-1", AT, 1)
    assert event.git is not None and event.git.satellites[0][0] == SATELLITE
    d = passed_then_out_of_visits()
    text = render_decision(d.run, d.graph, event.git)
    assert "git state not available" not in text
    assert f"- head `{git(origin, 'rev-parse', BRANCH)[:12]}`, 1 commit(s) ahead of `develop`" in text
    assert "- files changed: none" in text
    assert f"- satellite `{SATELLITE}`: head `{git(docs, 'rev-parse', BRANCH)[:12]}`, 1 commit(s) ahead" in text
    assert "files changed: `guide.md`, conflicts: guide.md" in text


def test_an_unreadable_satellite_is_left_out_and_the_rest_kept(world: tuple[Path, Path], tmp_path: Path) -> None:
    # reading the state never costs the mission: an unreadable repository is left out
    origin, _ = world
    raw = subprocess.run(
        ["git", "--git-dir", str(origin), "show", f"{STATE_BRANCH}:{record_path(RUN)}"], check=True, capture_output=True
    ).stdout
    run = Run.from_journal(raw).but(satellites=[SATELLITE, "octo/gone"])
    scratch = tmp_path / "scratch"
    subprocess.run(["git", "init", "--quiet", "--bare", str(scratch)], check=True)
    state = delivered_state(Remote(scratch, remote=str(origin)), run, str(origin), None)
    assert state is not None and set(state["satellites"]) == {SATELLITE}
    assert state["head"] == git(origin, "rev-parse", BRANCH) and state["ahead"] == 1


def test_a_record_without_git_state_says_so_and_a_forged_one_is_read_leniently() -> None:
    # the record is data anyone with push access could write: a wrong kind is left out, never an error
    assert read_state(None) is None and read_state(["head"]) is None
    forged = {
        "head": 7,
        "ahead": -3,
        "files_changed": ["a.py", 5, None],
        "conflicts": "a.py",
        "satellites": {"octo/docs": {"head": "d", "ahead": True, "satellites": {"x/y": {}}}, "octo/web": "no"},
    }
    assert read_state(forged) == GitState(
        head="", ahead=0, files_changed=("a.py",), satellites=(("octo/docs", GitState(head="d")),)
    )
    event = mission_event({"status": "done", "answer": "x", "git": forged}, "k", AT, 1)
    assert event.git is not None and event.git.files_changed == ("a.py",)
    assert mission_event({"status": "done", "answer": "x"}, "k", AT, 1).git is None
