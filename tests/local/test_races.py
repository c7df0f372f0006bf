"""Two continuing commands on one run at the same moment, as real processes (issue 11, item 9).

Each round puts a fresh run in the state the command needs, then starts two ``interlock`` processes together.
Whatever the interleaving, one of them drives the run and the other is told the run is busy, or finds its
event already applied: the run is never left ``running`` with no process, and no mission's result is thrown
away (a mission marked ``crashed`` when nothing was killed is exactly that). ``INTERLOCK_RACE_ROUNDS``
raises the number of rounds (one by default, three for ``resume``, to keep the suite fast).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.local.config import GateMode, LocalConfig
from app.local.missions import now
from app.local.shell import LocalShell, stop_event
from tests.helpers import ROOT
from tests.local.harness import AGENT, make_repo

GRAPH = parse_graph(
    {
        "name": "gated",
        "entry": "plan",
        "nodes": [
            {"stage": "plan", "capability": "planning", "humanGate": True},
            {"stage": "build", "capability": "coding"},
        ],
        "edges": [
            {"from": "plan", "verdict": "PASS", "to": "build"},
            {"from": "build", "verdict": "PASS", "to": "__end__"},
        ],
    }
)
ROUNDS = int(os.environ.get("INTERLOCK_RACE_ROUNDS", "1"))
RESUME_ROUNDS = 3 * ROUNDS  # the pair found stranding runs (6 of 40) gets more rounds
SLOW = {"*": {"answer": "done\nVERDICT: PASS", "sleep": 1.2}}  # the winner drives long enough to overlap
# (command line after the run id, the state the run is put in first, the event name in the record's keys)
COMMANDS: dict[str, tuple[list[str], str, str]] = {
    "resume": (["resume"], "interrupted", "resume"),
    "approve": (["approve", "--note", "go"], "gate", "gateapproved"),
    "amend": (["amend", "--note", "again"], "gate", "gateamended"),
    "answer": (["answer", "--text", "this file"], "input", "inputanswered"),
    "stop": (["stop"], "gate", "stop"),
    "route": (["route", "PASS"], "interrupted", "routechosen"),
    "deliver": (["deliver"], "interrupted", "deliver"),
    "abandon": (["abandon"], "interrupted", "abandon"),
}


def prepare(tmp: Path, repo: Path, run_id: str, state: str, monkeypatch: Any) -> tuple[Path, set[str]]:
    """A run of GRAPH in ``state``, driven in this process with a fast agent; then every agent is slow.
    Returns the agents' script and the keys of the events applied so far."""
    script = tmp / f"{run_id}.json"
    first = "Which file?\nVERDICT: NEEDS_INPUT" if state == "input" else "the plan\nVERDICT: PASS"
    script.write_text(json.dumps({"*": {"answer": first}}))
    monkeypatch.setenv("SCRIPT", str(script))
    shell = LocalShell(repo, LocalConfig(agent=AGENT), GateMode.STOP)
    run = shell.start(GRAPH, "Plan it", "", run_id=run_id)
    if state == "interrupted":
        run = shell.send(run_id, stop_event, drive=False)
    assert run.status is {"gate": Status.GATE_WAIT, "input": Status.AWAITING_INPUT}.get(state, Status.INTERRUPTED)
    script.write_text(json.dumps(SLOW))
    return script, set(run.applied)


def race(repo: Path, env: dict[str, str], run_id: str, first: list[str], second: list[str]) -> list[tuple[int, str]]:
    def spawn(args: list[str]) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "app", args[0], run_id, *args[1:], "--repo", str(repo), "--json"]
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    pair = [spawn(first), spawn(second)]
    return [(process.wait(timeout=90), process.communicate()[1]) for process in pair]


def check_round(repo: Path, run_id: str, outcomes: list[tuple[int, str]], names: set[str], before: set[str]) -> None:
    assert all(code in (0, 2) for code, _ in outcomes), outcomes  # never an internal error
    assert any(code == 0 for code, _ in outcomes), outcomes  # one of them wins
    for code, stderr in outcomes:
        # the loser is refused in words: the run is busy, cannot take it, or moved on while it waited for its place
        # (app/local/teamrun.py refuse_moved_on: a command applies to the run its person saw, SPEC H5)
        refused = ("is being executed by process", "cannot", "moved on while")
        assert code == 0 or any(words in stderr for words in refused), stderr
    shell = LocalShell(repo, LocalConfig())
    run = shell.store.load(run_id)
    # no process is left, so the run must not say `running` (status would say the runner stopped)
    assert run.status is not Status.RUNNING and shell.runner(run) != "stopped", (run.status, outcomes)
    assert all(m.status is not None and m.status.value != "crashed" for m in run.missions), run.missions
    applied = [key for key in run.applied if key.split("/")[1] in names and key not in before]
    winners = sum(code == 0 for code, _ in outcomes)
    assert 1 <= len(applied) <= winners, (applied, outcomes)  # one event per winner at most: never re-keyed


@pytest.mark.parametrize("command", list(COMMANDS))
def test_two_of_the_same_command_at_once_never_strand_the_run(tmp_path: Path, monkeypatch: Any, command: str) -> None:
    args, state, name = COMMANDS[command]
    repo = tmp_path / "repo"
    make_repo(repo)
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    for round_ in range(RESUME_ROUNDS if command == "resume" else ROUNDS):
        run_id = f"race-{command}-{round_}"
        script, before = prepare(tmp_path, repo, run_id, state, monkeypatch)
        env = {**os.environ, "SCRIPT": str(script), "PYTHONPATH": str(ROOT)}
        check_round(repo, run_id, race(repo, env, run_id, args, args), {name}, before)


@pytest.mark.parametrize("command", ["resume", "approve"])
def test_a_stop_beside_a_continuing_command_leaves_a_consistent_run(
    tmp_path: Path, monkeypatch: Any, command: str
) -> None:
    # SPEC J4: the stop reaches the run whichever process wins; the run ends stopped or where it stops
    args, state, name = COMMANDS[command]
    repo = tmp_path / "repo"
    make_repo(repo)
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    for round_ in range(ROUNDS):
        run_id = f"race-stop-{command}-{round_}"
        script, before = prepare(tmp_path, repo, run_id, state, monkeypatch)
        env = {**os.environ, "SCRIPT": str(script), "PYTHONPATH": str(ROOT)}
        check_round(repo, run_id, race(repo, env, run_id, args, ["stop"]), {name, "stop"}, before)


def test_a_retried_event_keeps_the_key_of_the_version_first_read(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J2: a compare-and-swap retry re-applies the same event, so a duplicate is recognised as one
    repo = tmp_path / "repo"
    make_repo(repo)
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    prepare(tmp_path, repo, "keyed", "gate", monkeypatch)
    shell = LocalShell(repo, LocalConfig(agent=AGENT), GateMode.STOP)
    made: list[str] = []

    def make(run: Any) -> ev.Event:
        made.append(f"{run.id}/stop/{run.version}")
        if len(made) == 1:  # another terminal writes between this read and the save
            shell.store.save(run.but(version=run.version + 1), run.version)
        return ev.StopRequested(key=made[0], at=now(), by="me")

    run = shell.send("keyed", make, drive=False)
    assert len(made) == 1 and made[0] in run.applied
