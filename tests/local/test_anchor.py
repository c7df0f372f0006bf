"""SPEC J6, issue 28 part 6: tamper evidence a forger cannot strip, locally. Each save also writes the head of the
run's chain outside the journal (``.git/interlock/anchors/<run-id>.json``, which no push, fetch or reset of the state
branch touches), and ``interlock verify`` compares the journal with it: a journal stripped of its chain, reset to an
earlier commit, or whose last transition was removed fails, named; an anchor that lags behind the journal is fine.
Real repositories in temporary folders, the real console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from app.store.journal import event_path, events_folder, record_path
from tests.local.test_verify import commit_on_state, finished_run, state_file, verify, where


def git(bench: Any, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(bench.folder), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def strip_journal(bench: Any, run_id: str) -> None:
    """What a forger who wants ``verify`` to find nothing to check does: the record's chain and every events file
    removed, as if the run had been written before tamper evidence."""
    record = json.loads(state_file(bench, record_path(run_id)))
    del record["chain"]
    commit_on_state(bench, record_path(run_id), (json.dumps(record, indent=1) + "\n").encode())
    listed = git(bench, "ls-tree", "-r", "--name-only", "interlock/state", events_folder(run_id)).split()
    assert listed
    for path in listed:
        commit_on_state(bench, path, None)


def anchor_file(bench: Any, run_id: str) -> Path:
    return bench.folder / ".git" / "interlock" / "anchors" / f"{run_id}.json"


def test_a_stripped_journal_fails_verify_and_names_it(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: every chain and events file removed said "verified 0 transitions" and exit 0
    bench, run_id = finished_run(tmp_path, monkeypatch)
    strip_journal(bench, run_id)
    result = verify(bench, run_id)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "stripped journal" in result.stdout and "verified 0 transitions" not in result.stdout
    assert "the local anchor" in result.stdout


def test_a_stripped_journal_fails_even_without_its_anchor(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: in a clone (no anchor beside it), a record made under engine rules that only records with a chain carry
    # had its chain removed: not a run written before tamper evidence
    bench, run_id = finished_run(tmp_path, monkeypatch)
    strip_journal(bench, run_id)
    anchor_file(bench, run_id).unlink()
    result = verify(bench, run_id, "--json")
    found = json.loads(result.stdout)["found"]
    assert result.returncode == 1 and found["kind"] == "edited record" and found["path"] == record_path(run_id)
    assert "hash chain was removed" in found["detail"]


def test_a_state_branch_reset_to_an_earlier_commit_fails_as_rolled_back(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the earlier commit is a consistent journal of an earlier version; only the anchor tells it was later
    bench, run_id = finished_run(tmp_path, monkeypatch)
    latest = json.loads(state_file(bench, record_path(run_id)))["version"]
    git(bench, "update-ref", "refs/heads/interlock/state", git(bench, "rev-parse", "interlock/state~2"))
    earlier = json.loads(state_file(bench, record_path(run_id)))["version"]
    assert earlier < latest
    result = verify(bench, run_id)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"rolled back at version {latest}" in result.stdout
    assert f"the journal ends at version {earlier}" in result.stdout


def test_the_last_transition_removed_fails_as_rolled_back(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the record put back to the version before and the last events file deleted, on a new commit
    bench, run_id = finished_run(tmp_path, monkeypatch)
    latest = json.loads(state_file(bench, record_path(run_id)))["version"]
    before = subprocess.run(
        ["git", "show", f"interlock/state~1:{where(record_path(run_id))}"],
        cwd=bench.folder,
        capture_output=True,
        check=True,
    ).stdout
    assert json.loads(before)["version"] == latest - 1
    commit_on_state(bench, record_path(run_id), before)
    commit_on_state(bench, event_path(run_id, latest), None)
    result = verify(bench, run_id, "--json")
    data = json.loads(result.stdout)
    assert result.returncode == 1 and data["found"]["kind"] == "rolled back", result.stdout
    assert data["found"]["version"] == latest and "the local anchor" in data["found"]["detail"]


def test_an_anchor_that_lags_is_no_alarm_and_one_that_disagrees_is(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the anchor is written after the save, so it may be older than the journal's head: verified; but an
    # anchor whose hash is not the journal's at its version means the journal was rewritten from there
    bench, run_id = finished_run(tmp_path, monkeypatch)
    path = anchor_file(bench, run_id)
    anchor = json.loads(path.read_text())
    latest = anchor["version"]
    third = json.loads(state_file(bench, event_path(run_id, 3)))
    path.write_text(json.dumps({**anchor, "version": 3, "hash": third["record"]}))
    result = verify(bench, run_id)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"verified {latest} transitions" in result.stdout and "the local anchor (version 3) agrees" in result.stdout
    path.write_text(json.dumps({**anchor, "version": 3, "hash": "0" * 64}))
    result = verify(bench, run_id)
    assert result.returncode == 1 and "rewritten journal at version 3" in result.stdout, result.stdout
