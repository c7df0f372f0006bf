"""SPEC J7: a run keeps the graph it started on. Editing or deleting the graph file changes no live run; a stored
graph that no longer has the run's content hash stops the run (``graph_mismatch``); ``resume --upgrade`` moves a
run to the graph's current version when its current stage is still there. The real console, real repositories."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from app.store.journal import graph_path
from tests.helpers import ROOT
from tests.local.harness import AGENT, make_repo
from tests.local.test_verify import commit_on_state, state_file
from tests.test_cli_runs import interlock, run_json

ORIGINAL = json.loads((ROOT / "graphs" / "basics" / "quote-edit.json").read_text())
REVIEWED = {
    **ORIGINAL,
    "nodes": [*ORIGINAL["nodes"], {"stage": "review", "capability": "review", "maxVisits": 2}],
    "edges": [
        {"from": "edit", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
    ],
}
SCRIPT = {
    "edit": {"answer": "edited", "write": {"quote.txt": "Be kind, {mission}."}},
    "review": {"answer": "VERDICT: PASS"},
}


class Place:
    """A repository, a graph file and the scripted agent's script."""

    def __init__(self, tmp: Path) -> None:
        self.repo = tmp / "repo"
        make_repo(self.repo)
        self.graph = tmp / "quote.json"
        self.write(ORIGINAL)
        (tmp / "script.json").write_text(json.dumps(SCRIPT))
        os.environ["SCRIPT"], os.environ["LOG"] = str(tmp / "script.json"), str(tmp / "log")

    def write(self, graph: dict[str, Any]) -> None:
        self.graph.write_text(json.dumps(graph))

    def cli(self, *args: str) -> Any:
        return interlock(*args, "--repo", str(self.repo))

    def start(self, run_id: str) -> dict[str, Any]:
        started = run_json(
            self.cli("run", str(self.graph), "--request", "Edit", "--agent", AGENT, "--run-id", run_id, "--json")
        )
        assert (started["status"], started["stage"]) == ("gate_wait", "edit")
        return started


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place(tmp_path)


def test_editing_or_deleting_the_graph_file_never_changes_a_live_run(place: Place) -> None:
    # SPEC J7: the run goes on on the graph stored with it at its start
    place.start("p1")
    place.write(REVIEWED)  # the file now routes edit -> review: the live run must not
    approved = run_json(place.cli("approve", "p1", "--json"))
    assert (approved["status"], approved["stage"], approved["visits"]) == ("awaiting_merge", "__end__", {"edit": 1})
    place.write(ORIGINAL)
    place.start("p2")
    place.graph.unlink()
    approved = run_json(place.cli("approve", "p2", "--json"))
    assert (approved["status"], approved["stage"]) == ("awaiting_merge", "__end__")


def test_resume_upgrade_moves_the_run_to_the_current_version_journaled_and_verifiable(place: Place) -> None:
    # SPEC J7: an explicit upgrade, its own transition; SPEC J6: the replay finds the graph the run left
    started = place.start("p3")
    place.write(REVIEWED)
    resumed = run_json(place.cli("resume", "p3", "--upgrade", "--graph", str(place.graph), "--json"))
    assert resumed["graph_hash"] != started["graph_hash"] and (resumed["status"], resumed["stage"]) == (
        "gate_wait",
        "edit",
    )
    log = interlock("journey", "p3", "--repo", str(place.repo), "--json")
    assert log.returncode == 0
    approved = run_json(place.cli("approve", "p3", "--json"))
    assert approved["status"] == "awaiting_merge" and approved["visits"]["review"] == 1
    stored = json.loads(state_file_of(place, graph_path("p3")))
    assert [node["stage"] for node in stored["nodes"]] == ["edit", "review"]
    verified = place.cli("verify", "p3")
    assert verified.returncode == 0 and "verified" in verified.stdout, verified.stdout + verified.stderr


def test_resume_upgrade_is_refused_when_the_current_stage_is_gone(place: Place) -> None:
    # SPEC J7: refused with why; nothing changed
    started = place.start("p4")
    renamed = json.loads(json.dumps(REVIEWED).replace('"edit"', '"change"'))
    place.write(renamed)
    refused = place.cli("resume", "p4", "--upgrade", "--graph", str(place.graph))
    assert refused.returncode == 2 and "has no stage 'edit', where the run is" in refused.stderr
    after = run_json(place.cli("status", "p4", "--json"))
    assert (after["status"], after["graph_hash"], after["version"]) == (
        "gate_wait",
        started["graph_hash"],
        started["version"],
    )


def test_a_stored_graph_without_the_runs_hash_stops_the_run_with_graph_mismatch(place: Place) -> None:
    # SPEC J7: checked at every load; a clear reason, never a traceback; the run stays stopped until settled
    place.start("p5")
    edited = json.loads(state_file_of(place, graph_path("p5")))
    edited["nodes"][0]["maxVisits"] = 9
    commit_on_state(_bench(place), graph_path("p5"), json.dumps(edited).encode())
    stopped = run_json(place.cli("approve", "p5", "--json"))
    assert (stopped["status"], stopped["reason"]["code"]) == ("escalated", "graph_mismatch")
    assert "resume --upgrade" in stopped["reason"]["message"]
    again = place.cli("resume", "p5")
    assert again.returncode == 2 and "its stored graph changed since it started" in again.stderr
    verified = place.cli("verify", "p5")
    assert verified.returncode == 1 and f"edited graph at version 1 ({graph_path('p5')})" in verified.stdout


class _Folder:
    def __init__(self, folder: Path) -> None:
        self.folder = folder


def _bench(place: Place) -> Any:
    return _Folder(place.repo)


def state_file_of(place: Place, path: str) -> bytes:
    return state_file(_bench(place), path)
