"""Roles do the missions locally, and the journey shows who did each (SPEC U1, W2, G4): capability → role →
agent → model for every mission, the model asked for beside the one used, and the whitelist's enforcement.

A real run on a real repository; the agents are a small script that reports the model it was given, or
one it was told to use instead (as an agent that ignores the role's model would).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.agents.base import NOT_ENFORCED
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.engine.team import parse_team
from app.local.config import GateMode, LocalConfig
from app.local.reports import done_by, journey_rows, render_journey
from app.local.shell import LocalShell
from app.store.journal import mission_path
from tests.helpers import edge, graph, node
from tests.local.harness import make_repo

AGENT = r"""
import json, os, sys
sys.stdin.read()
model = os.environ.get("REPORT_MODEL") or os.environ.get("INTERLOCK_MODEL")
with open(os.environ["INTERLOCK_USAGE_FILE"], "w") as handle:
    json.dump({"calls": 1, "model": model, "cost_usd": 0.001}, handle)
print("done\nVERDICT: PASS")
"""
GRAPH = parse_graph(
    graph(
        [node("build", "coding"), node("review", "review")],
        [edge("build", "PASS", "review"), edge("review", "PASS", "__end__")],
        entry="build",
    )
)


def test_each_mission_runs_its_roles_agent_and_model_and_the_journey_shows_who(tmp_path: Path) -> None:
    # SPEC U1, W2, G4: review is carried by no role, so the full-authority role does it; it asked for a small
    # model and its agent used another: the journey shows both
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    team = parse_team(
        {
            "roles": {
                "dev": {
                    "capabilities": ["coding"],
                    "agent": f"{sys.executable} {script}",
                    "model": "small-1",
                    "tools": ["Read", "Grep"],
                },
                "lead": {
                    "fullAuthority": True,
                    "capabilities": ["planning"],
                    "agent": f"REPORT_MODEL=big-default {sys.executable} {script}",
                    "model": "small-2",
                },
            }
        }
    )
    make_repo(tmp_path / "repo")
    shell = LocalShell(tmp_path / "repo", LocalConfig(agent="demo", team=team), GateMode.STOP)
    run = shell.start(GRAPH, "Greet", "")
    assert run.status is Status.AWAITING_MERGE, run.reason
    rows = journey_rows(run, shell.store)
    assert [(r["capability"], r["role"], r.get("model_asked"), r["model"]) for r in rows] == [
        ("coding", "dev", "small-1", "small-1"),
        ("review", "lead", "small-2", "big-default"),
    ]
    assert rows[0]["tools"] == ["Read", "Grep"] and rows[0]["tool_scope"] == NOT_ENFORCED
    assert "tools" not in rows[1]
    text = render_journey(rows)
    assert f"coding → dev → {sys.executable} {script} → small-1" in text
    assert "→ big-default (asked small-2)" in text
    assert "Read, Grep (not enforced)" in text
    record = json.loads(shell.store.read(mission_path(run.id, 1, "build")) or b"{}")
    assert (record["role"], record["model_asked"], record["tool_scope"]) == ("dev", "small-1", NOT_ENFORCED)


def test_an_old_record_without_the_new_fields_is_still_shown() -> None:
    # Older journals have no capability, role, model_asked or tools: the journey still reads them
    assert done_by({"agent": "claude", "model": "sonnet"}) == "claude → sonnet"
    assert done_by({"agent": "claude"}) == "claude → agent's default"
    assert done_by({"kind": "check", "agent": "check"}) == "the node's check command"
    old = {"seq": 1, "kind": "deliver", "stage": "a", "status": "done", "agent": "x", "model": None, "usage": {}}
    assert "x → agent's default" in render_journey([old])


def test_a_mission_no_role_carries_says_so() -> None:
    row = {"capability": "coding", "role": None, "agent": "claude", "model": None, "model_asked": None}
    assert done_by(row) == "coding → no role → claude → agent's default"
    assert done_by({**row, "model_asked": "haiku"}) == "coding → no role → claude → haiku (not reported)"
