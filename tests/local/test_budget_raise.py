"""A local run stopped at its call budget, raised with ``interlock budget``, and finished (SPEC P5).

Real git repository, real ``interlock`` processes, the scripted agent: the refused call is made once the limit is
raised, no mission is run twice, and the ledger (``interlock money``) and the journey show who raised it, when.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.store.journal import STATE_BRANCH, decision_path
from tests.local.harness import AGENT, make_repo
from tests.test_cli_runs import interlock, run_json

LOOP = {
    "name": "loop",
    "entry": "work",
    "nodes": [{"stage": "work", "capability": "coding"}, {"stage": "review", "capability": "review"}],
    "edges": [
        {"from": "work", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
        {"from": "review", "verdict": "FAIL", "to": "work"},
    ],
}
SCRIPT = {
    "work": {"answer": "built", "write": {"app.txt": "hello"}},
    "review:1": {"answer": "missing a test\nVERDICT: FAIL"},
    "review:2": {"answer": "good\nVERDICT: PASS"},
}


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    repo = tmp_path / "repo"
    make_repo(repo)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    (tmp_path / "loop.json").write_text(json.dumps(LOOP))
    monkeypatch.setenv("SCRIPT", str(tmp_path / "script.json"))
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    monkeypatch.setenv("USER", "dana")
    return repo, tmp_path / "loop.json", tmp_path / "log"


def stopped_at_max_calls(repo: Path, graph: Path) -> dict[str, Any]:
    args = ["--agent", AGENT, "--repo", str(repo), "--policy", "max_calls=3", "--run-id", "b1", "--json"]
    return run_json(interlock("run", str(graph), "--request", "Add app.txt", *args))


def decision_file(repo: Path) -> str:
    shown = subprocess.run(
        ["git", "show", f"{STATE_BRANCH}:{decision_path('b1')}"], cwd=repo, capture_output=True, text=True, check=True
    )
    return shown.stdout


def test_a_run_stopped_at_max_calls_is_raised_and_runs_to_the_end(bench: tuple[Path, Path, Path]) -> None:
    # SPEC P5: escalated with the figures and the command; raised; the refused call made; nothing run twice
    repo, graph, log = bench
    started = stopped_at_max_calls(repo, graph)
    assert (started["status"], started["stage"]) == ("escalated", "review")
    reason = started["reason"]
    assert reason["code"] == "call_budget_exhausted"
    assert "3 of 3 calls used; the next call needs 1 more" in reason["message"]
    decision = decision_file(repo)
    assert (
        "| raise budget **(recommended)** | `interlock budget b1 calls=+3` | `/interlock budget calls=+3` |" in decision
    )
    prompts_before = sorted(path.name for path in log.glob("*.txt"))
    assert prompts_before == ["0001-work.txt", "0002-review.txt", "0003-work.txt"]

    wrong = interlock("budget", "b1", "time=+3", "--repo", str(repo))  # refused in one line, nothing changed
    assert wrong.returncode == 2 and "`time=+3` is not a budget to raise" in wrong.stderr
    raised = run_json(interlock("budget", "b1", "calls=+2", "--repo", str(repo), "--json"))
    assert (raised["status"], raised["stage"]) == ("awaiting_merge", "__end__")
    assert sorted(path.name for path in log.glob("*.txt")) == [*prompts_before, "0004-review.txt"]
    ledger = raised["ledger"]
    assert (
        len(ledger["raises"]) == 1
        and ledger["raises"][0]["by"] == "dana"
        and ledger["raises"][0]["amounts"] == {"calls": 2.0}
    )
    assert ledger["calls"] == sum(line["calls"] for line in ledger["by_category"].values()) == 4
    assert raised["policy"]["maxCalls"] == 5

    money = interlock("money", "b1", "--repo", str(repo))
    assert "budget raises:" in money.stdout and "| dana | review | calls=+2 |" in money.stdout
    journey = interlock("journey", "b1", "--repo", str(repo))
    assert "budget calls=+2" in journey.stdout and "dana" in journey.stdout
    again = interlock("budget", "b1", "calls=+2", "--repo", str(repo))
    assert again.returncode != 0 and "not stopped by a budget" in again.stderr


def test_a_run_with_a_policy_and_a_raise_verifies(bench: tuple[Path, Path, Path]) -> None:
    # SPEC J6, P5: a run started with a policy (its Start event carries it) and raised replays through the engine;
    # the events file once held the policy by field name, which the engine refused as "not an events file"
    repo, graph, _ = bench
    stopped_at_max_calls(repo, graph)
    run_json(interlock("budget", "b1", "calls=+2", "--repo", str(repo), "--json"))
    verified = interlock("verify", "b1", "--repo", str(repo))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verified 6 transitions: run b1 versions 1-6" in verified.stdout
