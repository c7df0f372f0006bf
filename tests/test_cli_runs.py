"""The run commands as a user types them (SPEC W1–W4, E3, J1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES, ROOT
from tests.local.harness import AGENT, make_repo

GATED = str(ROOT / "graphs" / "basics" / "quote-edit.json")


def interlock(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300", **(env or {})},
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(tmp_path / "repo")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"edit": {"answer": "edited", "write": {"quote.txt": "Be kind."}}}))
    os.environ["SCRIPT"], os.environ["LOG"] = str(script), str(tmp_path / "log")
    return tmp_path / "repo"


def run_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_demo_runs_the_feature_graph_end_to_end() -> None:
    # SPEC W2, W3, W4: journey, money and the picture; one review FAIL then PASS; gate passed on autopilot
    result = interlock("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "status   awaiting_merge at __end__" in out
    assert (
        "| 4   | deliver | review    | 1     | done   | FAIL" in out
        and "| 7   | deliver | review    | 2     | done   | PASS" in out
    )
    assert "## Money" in out and "| total" in out and "```mermaid\nflowchart TD" in out
    assert "Autopilot passed the gate of `plan`" in result.stderr


def test_run_gate_approve_then_reports(repo: Path) -> None:
    # SPEC H1, H2, W1–W3, J1: a gate stops a non-interactive run; approve continues it; reports print JSON
    started = run_json(
        interlock(
            "run",
            GATED,
            "--request",
            "Edit the quote\nMake it kind.",
            "--agent",
            AGENT,
            "--repo",
            str(repo),
            "--run-id",
            "q1",
            "--json",
        )
    )
    assert (started["status"], started["stage"], started["gate"]["stage"]) == ("gate_wait", "edit", "edit")
    approved = run_json(interlock("approve", "q1", "--note", "Ship it", "--repo", str(repo), "--json"))
    assert approved["status"] == "awaiting_merge" and approved["request"]["title"] == "Edit the quote"
    status = run_json(interlock("status", "q1", "--repo", str(repo), "--json"))
    assert status["id"] == "q1" and status["ledger"]["attempts"] == 1
    board = json.loads(interlock("board", "--repo", str(repo), "--json").stdout)
    assert [(row["id"], row["status"], row["stage"]) for row in board] == [("q1", "awaiting_merge", "__end__")]
    journey = json.loads(interlock("journey", "q1", "--repo", str(repo), "--json").stdout)
    assert [(m["seq"], m["kind"], m["stage"], m["status"], m["verdict"]) for m in journey] == [
        (1, "deliver", "edit", "done", "PASS")
    ]
    money = json.loads(interlock("money", "q1", "--repo", str(repo), "--json").stdout)
    ledger_fields = {"attempts", "calls", "units", "accepted", "by_category", "raises", "raise_count"}  # SPEC P5
    assert set(money) == ledger_fields and money["calls"] == 1
    text = interlock("status", "q1", "--repo", str(repo), "--draw").stdout
    assert "next     review and merge interlock/q1 into develop" in text and "class stop_end current" in text


def test_commands_that_make_no_sense_explain_why(repo: Path) -> None:
    run_json(
        interlock(
            "run",
            GATED,
            "--request",
            "Edit",
            "--agent",
            AGENT,
            "--repo",
            str(repo),
            "--run-id",
            "q2",
            "--gates",
            "approve",
            "--json",
        )
    )
    refused = interlock("amend", "q2", "--note", "x", "--repo", str(repo))
    assert refused.returncode == 2 and "must be gate_wait" in refused.stderr
    unknown = interlock("status", "nope", "--repo", str(repo))
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr
    route = interlock("route", "q2", "MAYBE", "--repo", str(repo))
    assert route.returncode == 2 and "cannot apply RouteChosen" in route.stderr


def test_missing_base_and_bad_options(repo: Path) -> None:
    missing = interlock("run", GATED, "--request", "x", "--agent", AGENT, "--repo", str(repo), "--base", "trunk")
    assert missing.returncode == 2 and "base branch 'trunk' does not exist" in missing.stderr
    assert "git branch trunk" in missing.stderr
    policy = interlock("run", GATED, "--request", "x", "--repo", str(repo), "--policy", "max_calls=many")
    assert policy.returncode == 2 and "maxCalls needs a number" in policy.stderr
    both = interlock("run", GATED, "--repo", str(repo))
    assert both.returncode == 2 and "exactly one of --request and --request-file" in both.stderr
    invalid = interlock(
        "run", str(FIXTURES / "graphs" / "errors" / "no-termination.json"), "--request", "x", "--repo", str(repo)
    )
    assert invalid.returncode == 1 and "no-termination" in invalid.stderr
    not_repo = interlock("board", "--repo", str(repo.parent / "log-nowhere"))
    assert not_repo.returncode == 2 and "not a git repository" in not_repo.stderr


def test_policy_flag_stops_before_the_call(repo: Path, tmp_path: Path) -> None:
    # SPEC P1, P2: a call that would exceed the units is never made
    result = run_json(
        interlock(
            "run",
            GATED,
            "--request",
            "x",
            "--agent",
            AGENT,
            "--repo",
            str(repo),
            "--policy",
            "max_units=0.5,max_attempts=5",
            "--json",
        )
    )
    assert (result["status"], result["reason"]["code"]) == ("escalated", "cost_budget_exhausted")
    assert result["ledger"]["calls"] == 0 and not (tmp_path / "log").exists()
    zero = interlock("run", GATED, "--request", "x", "--repo", str(repo), "--policy", "max_calls=0")
    assert zero.returncode == 2 and "greater than or equal to 1" in zero.stderr
