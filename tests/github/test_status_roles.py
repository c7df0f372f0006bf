# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""The status comment on GitHub says who does each mission, as the local journey does (SPEC W2, issue 13 item
2): capability → role → agent → model, and ``fallback`` where no role named an agent, so the job ran the
workflow's ``agent`` input."""

from __future__ import annotations

import json
import re

from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture
from tests.github.test_team_queue import configure
from tests.helpers import doc

ROLES = """base: develop
default_graph: small
gatekeepers: [carol]
teams:
  core:
    roles:
      dev: {capabilities: [coding], agent: codex, model: o4-mini}
      lead: {fullAuthority: true}
"""


def status_rows(world: World, issue: int) -> list[str]:
    run = world.run(issue)
    body = str(world.fake.comments[int(run.links["status_comment"])]["body"])
    return [line for line in body.splitlines() if re.match(r"\| \d+ \| ", line)]


def record(seq: int, stage: str, answer: str, agent: str, model: str | None) -> str:
    data = {"seq": seq, "stage": stage, "status": "done", "answer": answer, "agent": agent, "model": model}
    return json.dumps({**data, "commits": 1, "usage": {"calls": 1, "input_tokens": 10, "cost_usd": 0.01}})


def test_each_mission_shows_its_capability_role_agent_and_model(world: World) -> None:
    # SPEC W2, U1: the role's agent and model; the full-authority role without an agent: the workflow's (fallback)
    configure(world, ROLES)
    _, issue = world.label()
    [build] = status_rows(world, issue)
    assert "| coding → dev → codex → o4-mini |" in build  # dispatched, not yet reported
    world.job_done(issue, 1, "build", "", record=record(1, "build", "built", "codex", "gpt-4.1"))
    world.review(issue, "approved")
    build, review = status_rows(world, issue)
    assert "| coding → dev → codex → gpt-4.1 (asked o4-mini) |" in build  # meant a model, got another: shown
    assert "| review → lead → fallback → agent's default |" in review
    world.job_done(issue, 2, "review", "", record=record(2, "review", "VERDICT: PASS", "claude-code", None))
    assert "| review → lead → claude-code (fallback) → agent's default |" in status_rows(world, issue)[1]


def test_a_repository_without_teams_runs_every_mission_on_the_fallback(world: World) -> None:
    _, issue = world.label()
    [build] = status_rows(world, issue)
    assert "| coding → no role → fallback → agent's default |" in build


def test_the_readme_says_the_status_comment_shows_who_does_each_mission() -> None:
    text = " ".join(doc("operating/service.md").split())
    assert "each mission's capability → role → agent → model, as the local journey shows them" in text
    assert "`fallback` where no role named an agent, so the job ran the workflow's `agent` input" in text
    assert REPO == "octo/app"
