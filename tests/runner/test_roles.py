"""Roles do the missions (SPEC U1, G4): the role that carries a mission's capability puts its agent, model
and tools in the mission's order; an Actions job runs them, the workflow's `agent` being only the fallback;
the mission record says who was meant to do the mission and how the whitelist was kept (SPEC W2).

The job tests run `interlock step` as a real process against a real bare repository (tests/runner/test_job.py).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agents.base import NOT_ENFORCED
from app.engine.effects import DispatchMission
from app.engine.events import Start
from app.engine.graph.validate import parse_graph
from app.engine.step import step
from app.engine.team import Team, parse_team
from app.runner.driver import OrderTerms, RunDriver
from app.runner.orders import mission_order, read_order, role_for
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, encode_json, mission_path, order_path
from app.store.memory import MemoryStore
from tests.engine.driver import loop_graph
from tests.helpers import edge, graph, node
from tests.runner.test_job import RUN, job, seed_origin, state_file

AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

TEAM = parse_team(
    {
        "roles": {
            "dev": {"capabilities": ["coding"], "agent": "codex", "model": "o4-mini", "tools": ["Read", "Edit"]},
            "lead": {"fullAuthority": True, "capabilities": ["planning"], "model": "big", "systemPrompt": "You lead."},
        }
    }
)


def dispatch(capability: str = "coding") -> DispatchMission:
    g = parse_graph(graph([node("build", capability)], [edge("build", "PASS", "__end__")], entry="build"))
    _run, effects = step(None, Start(key="s", at=AT, run_id=RUN, title="Add hello"), g)
    return next(e for e in effects if isinstance(e, DispatchMission))


def test_role_for_is_the_carrier_else_the_full_authority_role_else_none() -> None:
    # SPEC G4: a capability no role carries goes to the full-authority role at run time
    assert (role := role_for(TEAM, "coding")) is not None and role.name == "dev"
    assert (chief := role_for(TEAM, "review")) is not None and chief.name == "lead"
    assert role_for(None, "coding") is None
    assert role_for(Team(roles=[]), "coding") is None


def test_an_order_carries_its_roles_name_agent_model_tools_and_prompt() -> None:
    # SPEC U1: each dispatched mission carries its role's agent, model and tools in its order
    data = mission_order(dispatch("review"), role=role_for(TEAM, "review"))
    assert (data["role"], data["model"], "agent" in data, "tools" in data) == ("lead", "big", False, False)
    assert "You lead." in data["prompt"]
    order = read_order(json.loads(encode_json(mission_order(dispatch(), role=role_for(TEAM, "coding")))))
    assert (order.role, order.agent, order.model, order.tools) == ("dev", "codex", "o4-mini", ("Read", "Edit"))
    assert "Tools you may use: Read, Edit. Use no other." in order.prompt


def test_without_a_team_the_order_is_exactly_as_before() -> None:
    effect = dispatch()
    assert mission_order(effect, role=role_for(None, "coding")) == mission_order(effect)
    assert not {"role", "model", "tools", "agent"} & set(mission_order(effect))


def test_an_order_whose_tools_are_not_a_list_of_names_is_refused_not_read_as_no_whitelist() -> None:
    data = mission_order(dispatch(), role=role_for(TEAM, "coding"))
    with pytest.raises(ValueError, match="tools"):
        read_order({**data, "tools": "Read"})


def test_the_driver_puts_the_teams_role_in_each_order_it_saves() -> None:
    # SPEC U1: the dispatching code takes the role from role_for with the team passed in
    store = MemoryStore()
    g = parse_graph(loop_graph())
    RunDriver(store, lambda: OrderTerms(team=TEAM)).start(Start(key="s", at=AT, run_id="r-1", title="T"), g)
    saved = store.read(order_path("r-1", 1, "work"))
    assert saved is not None
    assert {k: json.loads(saved).get(k) for k in ("role", "agent", "model")} == {
        "role": "dev",
        "agent": "codex",
        "model": "o4-mini",
    }
    per_run = MemoryStore()
    chosen = RunDriver(per_run, lambda: OrderTerms(team=lambda run: TEAM if run.id == "r-1" else None))
    chosen.start(Start(key="s", at=AT, run_id="r-1", title="T"), g)
    assert json.loads(per_run.read(order_path("r-1", 1, "work")) or b"{}")["role"] == "dev"
    plain = MemoryStore()
    RunDriver(plain, lambda: OrderTerms()).start(Start(key="s", at=AT, run_id="r-1", title="T"), g)
    assert "role" not in json.loads(plain.read(order_path("r-1", 1, "work")) or b"{}")


ROLE_AGENT = r"""
import json, os, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path(os.environ["SEEN"]).write_text(json.dumps({"by": "role", "model": os.environ.get("INTERLOCK_MODEL")}))
print("done by the role\nVERDICT: PASS")
"""


def with_order(origin: Path, tmp_path: Path, **order: object) -> None:
    """Rewrite the first mission's order on the state branch, as a service with a team would have saved it."""
    seed = Remote(tmp_path / "seed")
    seed.fetch(STATE_BRANCH)
    raw = state_file(origin, order_path(RUN, 1, "build"))
    seed.add_files(STATE_BRANCH, {order_path(RUN, 1, "build"): encode_json({**raw, **order})}, "interlock: order")


def test_the_job_runs_the_agent_and_model_its_order_names(tmp_path: Path) -> None:
    # SPEC U1: the workflow's `agent` input is only the fallback when the order names none
    origin = seed_origin(tmp_path)
    script = tmp_path / "role_agent.py"
    script.write_text(ROLE_AGENT)
    agent = f"command:{sys.executable} {script}"
    with_order(origin, tmp_path, role="dev", agent=agent, model="small-1", tools=["Read", "Grep"])
    done, _checkout = job(origin, tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"by": "role", "model": "small-1"}
    record = state_file(origin, mission_path(RUN, 1, "build"))
    # SPEC W2: the record names capability, role, the model asked for and the whitelist, not enforced here
    assert {k: record.get(k) for k in ("capability", "role", "model_asked", "tools", "tool_scope")} == {
        "capability": "coding",
        "role": "dev",
        "model_asked": "small-1",
        "tools": ["Read", "Grep"],
        "tool_scope": NOT_ENFORCED,
    }


def test_the_job_falls_back_to_the_workflows_agent_when_the_order_names_none(tmp_path: Path) -> None:
    origin = seed_origin(tmp_path)
    done, _checkout = job(origin, tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert "INTERLOCK_MODEL" not in seen["env"]  # the default agent, with no role's model
    record = state_file(origin, mission_path(RUN, 1, "build"))
    assert (record["capability"], record["role"], record["model_asked"]) == ("coding", None, None)
    assert "tools" not in record and "tool_scope" not in record


def test_a_role_agent_that_cannot_be_built_is_a_failed_mission_not_a_lost_job(tmp_path: Path) -> None:
    origin = seed_origin(tmp_path)
    with_order(origin, tmp_path, role="dev", agent="command:   ")
    done, _checkout = job(origin, tmp_path)
    assert done.returncode == 0, done.stderr
    record = state_file(origin, mission_path(RUN, 1, "build"))
    assert record["status"] == "failed" and "could not run" in record["answer"]
