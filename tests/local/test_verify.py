"""SPEC J6: a tamper-evident journal. ``interlock verify`` replays a run's recorded transitions through the engine
and names the first divergence; real repositories in temporary folders, the real console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.engine.record import Status
from app.gitaccess import on_machine_env
from app.store.journal import event_path, events_folder, mission_path, record_path
from app.store.layout import sharded
from tests.local.harness import Bench
from tests.local.test_runs import LOOP, WORK

SCRIPT = {"work": WORK, "review:1": {"answer": "missing tests\nVERDICT: FAIL"}, "review:2": {"answer": "VERDICT: PASS"}}


def verify(bench: Bench, run_id: str, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["interlock", "verify", run_id, "--repo", str(bench.folder), *more], capture_output=True, text=True, timeout=60
    )


def where(path: str) -> str:
    """Where a file of a run lies on the branch: a new run is in layout v2 (app/store/layout.py), and verify
    names files by their logical (v1) path, as the hash chain does."""
    return sharded(path) or path


def state_file(bench: Bench, path: str) -> bytes:
    return subprocess.run(
        ["git", "show", f"interlock/state:{where(path)}"], cwd=bench.folder, capture_output=True, check=True
    ).stdout


def commit_on_state(bench: Bench, path: str, content: bytes | None) -> None:
    """Edit (or delete, ``None``) one file of the state branch by hand, as anyone with push access could."""
    path = where(path)
    git = ["git", "-C", str(bench.folder)]
    env = on_machine_env()
    env["GIT_INDEX_FILE"] = str(bench.folder / ".git" / "tamper-index")
    subprocess.run([*git, "read-tree", "interlock/state"], env=env, check=True)
    if content is None:
        subprocess.run([*git, "rm", "--cached", "-q", path], env=env, check=True)
    else:
        blob = subprocess.run([*git, "hash-object", "-w", "--stdin"], input=content, capture_output=True, check=True)
        info = f"100644,{blob.stdout.decode().strip()},{path}"
        subprocess.run([*git, "update-index", "--add", "--cacheinfo", info], env=env, check=True)
    tree = subprocess.run([*git, "write-tree"], env=env, capture_output=True, text=True, check=True).stdout.strip()
    head = subprocess.run([*git, "rev-parse", "interlock/state"], capture_output=True, text=True, check=True)
    made = [*git, "commit-tree", tree, "-p", head.stdout.strip(), "-m", "edited by hand"]
    commit = subprocess.run(made, env=env, capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/interlock/state", commit], check=True)


def finished_run(tmp_path: Path, monkeypatch: Any) -> tuple[Bench, str]:
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(LOOP, "Do the work", "details")
    assert run.status is Status.AWAITING_MERGE
    return bench, run.id


def test_a_clean_run_verifies_every_transition(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: every transition's event is recorded once and replays to the version whose hash it recorded
    bench, run_id = finished_run(tmp_path, monkeypatch)
    record = json.loads(state_file(bench, record_path(run_id)))
    result = verify(bench, run_id)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"verified {record['version']} transitions" in result.stdout
    assert record["chain"]["previous"] and len(record["chain"]["missions"]) == 4


def test_one_edited_byte_in_the_record_fails_verify_naming_it(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the stored record is not what its last transition wrote
    bench, run_id = finished_run(tmp_path, monkeypatch)
    stored = state_file(bench, record_path(run_id))
    edited = stored.replace(b'"review": 2', b'"review": 1', 1)
    assert edited != stored and len(edited) == len(stored)
    commit_on_state(bench, record_path(run_id), edited)
    result = verify(bench, run_id)
    assert result.returncode == 1, result.stdout + result.stderr
    version = json.loads(stored)["version"]
    assert f"edited record at version {version} ({record_path(run_id)})" in result.stdout


def test_a_deleted_or_edited_mission_record_fails_verify_naming_it(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: each transition vouches for the mission records it finished, by hash
    bench, run_id = finished_run(tmp_path, monkeypatch)
    review = mission_path(run_id, 2, "review")
    original = state_file(bench, review)
    commit_on_state(bench, review, None)
    result = verify(bench, run_id)
    assert result.returncode == 1 and f"missing mission record at version 3 ({review})" in result.stdout
    commit_on_state(bench, review, original.replace(b"missing", b"Missing", 1))
    result = verify(bench, run_id, "--json")
    found = json.loads(result.stdout)["found"]
    assert result.returncode == 1 and found == {
        "kind": "edited mission record",
        "version": 3,
        "path": review,
        "detail": "its hash is not the one recorded",
    }
    commit_on_state(bench, review, original)
    assert verify(bench, run_id).returncode == 0


def test_a_deleted_transition_or_edited_event_is_named(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: an events file gone, or an event that no longer replays to the version it recorded
    bench, run_id = finished_run(tmp_path, monkeypatch)
    third = event_path(run_id, 3)
    original = state_file(bench, third)
    data = json.loads(original)
    data["event"]["answer"] = data["event"]["answer"].replace("FAIL", "PASS")
    commit_on_state(bench, third, json.dumps(data).encode())
    result = verify(bench, run_id)
    assert result.returncode == 1 and f"engine drift at version 3 ({third}): replaying MissionFinished" in result.stdout
    commit_on_state(bench, third, None)
    result = verify(bench, run_id)
    assert result.returncode == 1 and f"missing transition at version 3 ({third})" in result.stdout


def test_a_record_older_than_tamper_evidence_loads_and_says_from_where_it_checks(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC J6: a record written before this change has no chain and no events files; verify says so plainly,
    # and the run's next transitions start the chain, checkable from that version on
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "Do the work", "details")
    old = json.loads(state_file(bench, record_path(run.id)))
    del old["chain"], old["rules"]  # neither was written before tamper evidence, nor was its anchor (SPEC J6)
    (bench.folder / ".git" / "interlock" / "anchors" / f"{run.id}.json").unlink()
    commit_on_state(bench, record_path(run.id), (json.dumps(old, indent=1) + "\n").encode())
    listed = subprocess.run(
        ["git", "-C", str(bench.folder), "ls-tree", "-r", "--name-only", "interlock/state", events_folder(run.id)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for path in listed:
        commit_on_state(bench, path, None)
    result = verify(bench, run.id)
    assert result.returncode == 0
    assert f"verified 0 transitions: run {run.id} (version {run.version}) was written before tamper" in result.stdout
    from app.engine import events as ev
    from app.local.missions import now

    shell.send(run.id, lambda r: ev.Linked(key="linked-after", at=now(), links={"note": "x"}))
    result = verify(bench, run.id)
    assert result.returncode == 0, result.stdout
    version = run.version + 1
    assert f"verified 1 transitions: run {run.id} versions {version}-{version} (versions before {version}" in (
        result.stdout
    )


def test_engine_drift_is_named_at_the_first_version_it_changes(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: a new engine that would route the same history differently diverges at the first event it changes
    from app.engine import events as ev
    from app.runner import verify as verifying
    from app.store.gitstore import GitStore

    bench, run_id = finished_run(tmp_path, monkeypatch)
    store = GitStore(bench.folder)
    assert verifying.verify(store, run_id).found is None
    real_step = verifying.step

    def drifted(run: Any, event: Any, graph: Any, rules: Any = None) -> Any:
        after, effects = real_step(run, event, graph, rules)
        if isinstance(event, ev.MissionFinished) and "FAIL" in event.answer:  # the review's FAIL now routes elsewhere
            after = after.but(stage="review")
        return after, effects

    monkeypatch.setattr(verifying, "step", drifted)
    found = verifying.verify(store, run_id).found
    assert found is not None and found.kind is verifying.Divergence.ENGINE_DRIFT and found.version == 3
    assert found.path == event_path(run_id, 3) and "MissionFinished" in found.detail


README_SENTENCES = (  # each checked by a test above (SPEC J6) or in tests/local/test_pinned_graph.py (SPEC J7)
    "Each record carries the SHA-256 of its previous version and of each mission record it references",
    "each transition writes its event once, with the hash of the record it made, to "
    "`runs/<run-id>/events/<version>.json`.",
    "`interlock verify RUN` replays every recorded transition through the engine and names the first divergence: an "
    "edited record, a missing or edited mission record, a missing transition, an edited graph, or engine drift",
    "It exits 0 with `verified N transitions`, 1 with the divergence, 2 when it cannot check;",
    "A record written before tamper evidence still loads: `verify` says from which version on it can check.",
    "editing or deleting the graph file changes no live run, and a stored graph that no longer has the run's "
    "content hash stops the run as `escalated` with the reason `graph_mismatch`.",
    "`interlock resume --upgrade RUN` (with `--graph FILE` when the file is not found by the graph's name) moves a "
    "stopped run to the graph's current version when its current stage still exists, and refuses otherwise, saying "
    "why; the upgrade is a transition of its own, and the graph the run leaves is kept under `runs/<run-id>/graphs/` "
    "so that `verify` can still replay the versions before it.",
)


def test_readme_says_what_verify_and_pinned_graphs_do() -> None:
    # SPEC J6, J7: the README's words, each sentence's behaviour tested in this file and test_pinned_graph.py
    from tests.helpers import doc

    text = " ".join(doc("local/journal.md").split())
    for sentence in README_SENTENCES:
        assert sentence in text, sentence


def test_verify_of_an_unknown_run_is_bad_input(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: exit 2 for what cannot be checked, one line, no traceback
    bench, _ = finished_run(tmp_path, monkeypatch)
    result = verify(bench, "no-such-run")
    assert result.returncode == 2 and "no-such-run" in result.stderr and "Traceback" not in result.stderr


def test_another_runs_record_in_place_of_the_run_is_named_as_an_edited_record(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: a record copied over from another run is an edit of this run's record, named by this run's path;
    # it was checked as the other run, whose intact files were then blamed
    bench, run_id = finished_run(tmp_path, monkeypatch)
    other = bench.shell().start(LOOP, "Other work", "details")
    commit_on_state(bench, record_path(run_id), state_file(bench, record_path(other.id)))
    result = verify(bench, run_id, "--json")
    found = json.loads(result.stdout)["found"]
    assert result.returncode == 1 and found["kind"] == "edited record" and found["path"] == record_path(run_id)
    assert other.id in found["detail"]
    assert verify(bench, other.id).returncode == 0


@pytest.mark.parametrize("written", [b'"version": 1.0', b'"version": true', b'"version": "1"'])
def test_an_events_file_whose_version_is_not_a_whole_number_is_an_edited_transition(
    tmp_path: Path, monkeypatch: Any, written: bytes
) -> None:
    # SPEC J6: an events file says its version as the driver writes it, a whole number; `1.0` (one byte added)
    # or `true` passed as version 1, and the run verified
    bench, run_id = finished_run(tmp_path, monkeypatch)
    first = event_path(run_id, 1)
    stored = state_file(bench, first)
    assert b'"version": 1,' in stored
    commit_on_state(bench, first, stored.replace(b'"version": 1', written, 1))
    result = verify(bench, run_id)
    assert result.returncode == 1 and f"edited transition at version 1 ({first}): not an events file" in result.stdout
