"""SPEC J6: each transition records the engine rules it was made under (app/engine/rules.py), and ``interlock
verify`` replays it with them. Real repositories in temporary folders, the real console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.engine import rules
from app.engine.record import Status
from app.store.journal import event_path, record_path
from tests.helpers import doc
from tests.local.harness import Bench
from tests.local.test_runs import LOOP
from tests.local.test_verify import SCRIPT, commit_on_state, finished_run, state_file, verify


def test_every_transition_records_the_rules_it_was_made_under(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the record and each events file say which engine rules built them
    bench, run_id = finished_run(tmp_path, monkeypatch)
    record = json.loads(state_file(bench, record_path(run_id)))
    assert record["rules"] == rules.RULES_VERSION
    for version in range(1, record["version"] + 1):
        assert json.loads(state_file(bench, event_path(run_id, version)))["rules"] == rules.RULES_VERSION
    result = verify(bench, run_id)
    assert result.returncode == 0 and f"verified {record['version']} transitions" in result.stdout


def test_a_journal_that_recorded_no_rules_still_verifies(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: Interlock before issue 27 recorded no rules: such a journal (no `rules` anywhere) still verifies
    monkeypatch.setattr(rules, "CURRENT", rules.Rules(rules.UNRECORDED[0], recorded=False))
    bench, run_id = finished_run(tmp_path, monkeypatch)
    record = state_file(bench, record_path(run_id))
    assert b'"rules"' not in record and b'"rules"' not in state_file(bench, event_path(run_id, 3))
    result = verify(bench, run_id)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"verified {json.loads(record)['version']} transitions" in result.stdout


def test_tampering_with_the_recorded_rules_is_detected(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the rules are in the record, whose hash the events file and the next record carry: an events
    # file claiming other rules (or none) replays to another record, and an edited record fails its hash
    bench, run_id = finished_run(tmp_path, monkeypatch)
    third = event_path(run_id, 3)
    original = state_file(bench, third)
    for claimed in (1, 2, None):
        data = json.loads(original)
        if claimed is None:
            del data["rules"]
        else:
            data["rules"] = claimed
        commit_on_state(bench, third, json.dumps(data).encode())
        result = verify(bench, run_id)
        assert result.returncode == 1 and f"engine drift at version 3 ({third})" in result.stdout, claimed
    commit_on_state(bench, third, original)
    assert verify(bench, run_id).returncode == 0
    record = json.loads(state_file(bench, record_path(run_id)))
    record["rules"] = 2
    commit_on_state(bench, record_path(run_id), (json.dumps(record, indent=1) + "\n").encode())
    result = verify(bench, run_id)
    assert result.returncode == 1 and f"edited record at version {record['version']}" in result.stdout


def test_a_transition_made_under_rules_this_interlock_does_not_know_is_refused_plainly(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC J6: a newer Interlock's rules are not guessed: verify says it cannot check, names them, exits 2
    monkeypatch.setattr(rules, "CURRENT", rules.Rules(version=rules.RULES_VERSION + 1))  # a newer Interlock
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(LOOP, "Do the work", "details")
    assert run.status is Status.AWAITING_MERGE
    result = verify(bench, run.id)
    newer = rules.RULES_VERSION + 1
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"unknown engine rules at version 1 ({event_path(run.id, 1)}): it was made under engine rules {newer}" in (
        result.stdout
    )
    assert "Traceback" not in result.stderr
    as_json = json.loads(verify(bench, run.id, "--json").stdout)
    assert as_json["found"]["kind"] == "unknown engine rules" and as_json["checked"] == 0


def test_readme_says_verify_replays_each_transition_by_its_rules() -> None:
    # the tests above are the behaviour; these are the words
    text = " ".join(doc("local/journal.md").split())
    for sentence in README_SENTENCES:
        assert sentence in text, sentence


README_SENTENCES = (
    f'Each transition records the engine rules it was made under (`"rules": {rules.RULES_VERSION}` in the record '
    "and its events file), and `verify` replays it with those rules",
    "A transition recorded before Interlock recorded its rules says none; `verify` accepts it when one of the rules "
    "of that time (1 to 3) gives the record it recorded",
    "an events file claiming other rules gives another record than the one whose hash the chain carries",
    "A transition made under rules this Interlock does not know (a newer one wrote it) is not checked: `verify` "
    "names the rules and exits 2.",
)
