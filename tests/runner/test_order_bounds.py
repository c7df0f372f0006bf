"""A role's `maxTokens` reaches an Actions job's HTTP agent through the mission's order (issue 17, SPEC U1)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.engine.errors import TeamInvalid
from app.engine.team import parse_team
from app.runner.job import JobSettings, _call
from app.runner.orders import mission_order, read_order, role_for
from app.store.journal import encode_json
from tests.engine.test_overflow_prompt import DRAFT, review_after_two_drafts
from tests.helpers import doc
from tests.runner.test_roles import dispatch

TEAM = parse_team({"roles": {"triager": {"capabilities": ["coding"], "agent": "openai:gemma", "maxTokens": 256}}})


def test_the_roles_bound_goes_into_the_order_and_the_jobs_call() -> None:
    # SPEC U1: what the role says runs its missions on GitHub as locally
    order = read_order(json.loads(encode_json(mission_order(dispatch(), role=role_for(TEAM, "coding")))))
    assert order.max_tokens == 256
    settings = JobSettings(workdir=Path("."), run_id="r", seq=1)
    run = SimpleNamespace(id="r")  # the call reads the run's id alone
    assert _call(run, order, settings, {}).max_tokens == 256  # type: ignore[arg-type]


def test_an_order_without_a_bound_leaves_the_agents_default() -> None:
    plain = parse_team({"roles": {"dev": {"capabilities": ["coding"]}}})
    data = mission_order(dispatch(), role=role_for(plain, "coding"))
    assert "max_tokens" not in data and read_order(data).max_tokens is None
    assert read_order({**data, "max_tokens": "lots"}).max_tokens is None


@pytest.mark.parametrize("bound", [0, -5, "256", 2.5])
def test_a_bound_that_is_no_positive_whole_number_is_refused_with_its_path(bound: object) -> None:
    # bad input gets a clear error naming where it is
    with pytest.raises(TeamInvalid) as caught:
        parse_team({"roles": {"dev": {"capabilities": ["coding"], "maxTokens": bound}}})
    assert "roles.0.maxTokens" in str(caught.value), caught.value


def test_an_order_holds_the_shorter_prompt_the_job_sends_after_a_context_overflow() -> None:
    # issue 17, item 1: the job cannot rebuild a prompt (its order holds no context), so the order carries it
    effect = review_after_two_drafts().dispatched()
    order = read_order(json.loads(encode_json(mission_order(effect))))
    assert order.shorter_prompt is not None and len(order.shorter_prompt) < len(order.prompt) - len(DRAFT)
    assert "more bytes in mission record #3" in order.shorter_prompt
    call = _call(SimpleNamespace(id="r"), order, JobSettings(workdir=Path("."), run_id="r", seq=1), {})  # type: ignore[arg-type]
    assert call.shorter is not None and call.shorter() == order.shorter_prompt
    assert "shorter_prompt" not in mission_order(dispatch())  # a first mission: nothing to cut


def test_an_order_whose_role_names_an_agent_cli_carries_no_shorter_prompt() -> None:
    # issue 17: only a chat API's server refuses a prompt longer than its model's context; an order is written on
    # the state branch at every mission, so the other agents' orders keep their size
    effect = review_after_two_drafts().dispatched()
    for agent, carried in (("claude", False), ("command:python agent.py", False), ("openai:gemma", True)):
        team = parse_team({"roles": {"dev": {"capabilities": [effect.capability], "agent": agent}}})
        order = mission_order(effect, role=role_for(team, effect.capability))
        assert ("shorter_prompt" in order) is carried, agent
    readme = " ".join(doc("local/agents.md").split())
    assert "unless the role names an agent that is no chat API (`claude`, a command): its orders keep their size" in (
        readme
    )
