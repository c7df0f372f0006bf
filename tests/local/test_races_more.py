"""Review of issue 12: more pairs of commands at once on one local run, and a run whose stored graph is corrupt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.local.config import LocalConfig
from app.local.shell import LocalShell
from app.store.journal import graph_path
from tests.helpers import ROOT
from tests.local.harness import make_repo
from tests.local.test_races import COMMANDS, check_round, prepare, race

PAIRS = [("amend", "abandon"), ("resume", "abandon"), ("answer", "stop"), ("deliver", "stop"), ("approve", "amend")]


@pytest.mark.parametrize(("one", "other"), PAIRS)
def test_two_different_commands_at_once_leave_a_consistent_run(
    tmp_path: Path, monkeypatch: Any, one: str, other: str
) -> None:
    args, state, name = COMMANDS[one]
    other_args, _, other_name = COMMANDS[other]
    repo = tmp_path / "repo"
    make_repo(repo)
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    run_id = f"race-{one}-{other}"
    script, before = prepare(tmp_path, repo, run_id, state, monkeypatch)
    env = {**os.environ, "SCRIPT": str(script), "PYTHONPATH": str(ROOT)}
    outcomes = race(repo, env, run_id, args, other_args)
    assert all(code != 70 for code, _ in outcomes), outcomes
    if all(code != 0 for code, _ in outcomes):
        pytest.fail(f"neither won: {outcomes}")
    check_round(repo, run_id, outcomes, {name, other_name}, before)


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"name": "x"}', b""])
def test_a_corrupt_stored_graph_is_a_clear_error_not_an_internal_one(
    tmp_path: Path, monkeypatch: Any, content: bytes
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    script, _ = prepare(tmp_path, repo, "corrupt", "interrupted", monkeypatch)
    store = LocalShell(repo, LocalConfig()).store
    run = store.load("corrupt")
    store.save(run.but(version=run.version + 1), run.version, {graph_path("corrupt"): content})
    env = {**os.environ, "SCRIPT": str(script), "PYTHONPATH": str(ROOT)}
    for args in (["resume"], ["status"], ["abandon"]):
        done = subprocess.run(
            [sys.executable, "-m", "app", args[0], "corrupt", "--repo", str(repo)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode != 70 and "Traceback" not in done.stderr, (args, done.returncode, done.stderr)
    after = LocalShell(repo, LocalConfig()).store.load("corrupt")
    assert after.status.value != "running"
