"""The run record keeps the team the run belongs to (issue 13); a journal written before teams still loads."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from app.engine.events import Start
from app.engine.graph.model import Graph
from app.engine.record import Run
from app.engine.step import step

GRAPH = Graph.model_validate(
    {
        "name": "g",
        "entry": "build",
        "nodes": [{"stage": "build", "capability": "coding"}],
        "edges": [{"from": "build", "verdict": "PASS", "to": "__end__"}],
    }
)


def started(**fields: str) -> Run:
    run, _ = step(None, Start(key="k", at=datetime(2026, 1, 1, tzinfo=UTC), run_id="r", title="t", **fields), GRAPH)
    return run


def test_the_start_event_names_the_team_the_record_keeps() -> None:
    # SPEC J1: the record round-trips, the team with it
    run = started(team="docs")
    assert run.team == "docs"
    assert Run.from_journal(run.journal_json()) == run and json.loads(run.journal_json())["team"] == "docs"


def test_a_journal_older_than_teams_loads_with_no_team() -> None:
    data = json.loads(started().journal_json())
    del data["team"]
    assert Run.from_journal(data).team == ""
