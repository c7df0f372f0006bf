"""What a chat-API agent costs: tokens times a dated price table (an estimate), or unknown — never $0."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import httpx
import pytest
import respx

from app.agents.http import AnthropicAgent, OpenAIChatAgent
from app.agents.prices import ModelPrice, price_table, shipped_prices
from app.agents.spec import agent_from_spec
from app.engine.record import MissionStatus
from app.local.config import ConfigError, load_config
from tests.agents.test_http import make_call
from tests.helpers import ROOT, doc

OPENAI_BASE = "http://llm.test/v1"
OPENAI_URL = f"{OPENAI_BASE}/chat/completions"
ANTHROPIC_BASE = "http://claude.test"


def openai_answer(model: str, prompt_tokens: int, completion_tokens: int) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "VERDICT: YES"}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        },
    )


def test_the_price_file_is_dated_sourced_and_shipped_with_the_package() -> None:
    # SPEC P3: an estimate says where its prices come from; the file must reach an installed package
    data = json.loads((ROOT / "app" / "agents" / "prices.json").read_text())
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["as_of"]) and data["sources"]
    assert shipped_prices().as_of == data["as_of"]
    assert {"gpt-4o-mini", "gpt-4.1", "claude-sonnet-4-5", "claude-haiku-4-5"} <= set(shipped_prices().prices)
    assert all(price.input >= 0 and price.output > 0 for price in shipped_prices().prices.values())
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "prices.json" in pyproject["tool"]["setuptools"]["package-data"]["app.agents"]
    assert f"dated {data['as_of']}" in doc("local/agents.md")  # the README names the table's date


@respx.mock
def test_openai_cost_is_tokens_times_the_price_of_the_model_that_answered_marked_an_estimate() -> None:
    # SPEC P3: real usage recorded; a cost worked out by Interlock is marked an estimate
    respx.post(OPENAI_URL).mock(return_value=openai_answer("gpt-4o-mini-2024-07-18", 1_000_000, 10_000))
    outcome = OpenAIChatAgent("gpt-4o-mini", OPENAI_BASE, "sk").run(make_call())
    assert outcome.status is MissionStatus.DONE
    assert outcome.usage.cost_usd == pytest.approx(0.15 + 0.006)  # $0.15 and $0.60 per million tokens
    assert outcome.usage.estimated is True


@respx.mock
def test_anthropic_cost_is_an_estimate_from_its_price() -> None:
    # SPEC P3
    respx.post(f"{ANTHROPIC_BASE}/v1/messages").mock(
        return_value=httpx.Response(
            200,
            json={
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "VERDICT: NO"}],
                "usage": {"input_tokens": 2000, "output_tokens": 100},
            },
        )
    )
    outcome = AnthropicAgent("claude-sonnet-4-5", ANTHROPIC_BASE, "ak").run(make_call())
    assert outcome.usage.cost_usd == pytest.approx((2000 * 3 + 100 * 15) / 1_000_000)
    assert outcome.usage.estimated is True


@respx.mock
def test_a_model_without_a_price_has_an_unknown_cost_not_zero() -> None:
    # SPEC P3: an unknown cost is never recorded as $0
    respx.post(OPENAI_URL).mock(return_value=openai_answer("llama3:8b", 500, 20))
    outcome = OpenAIChatAgent("llama3", OPENAI_BASE, None).run(make_call())
    assert outcome.status is MissionStatus.DONE
    assert outcome.usage.cost_usd is None and outcome.usage.estimated is False
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (500, 20)


@respx.mock
def test_configured_prices_price_a_new_model_and_override_a_shipped_one() -> None:
    # SPEC P3: prices are overridable in the configuration (a local model at $0 is then known, not unknown)
    respx.post(OPENAI_URL).mock(
        side_effect=[openai_answer("llama3", 1_000_000, 0), openai_answer("gpt-4o-mini", 1_000_000, 0)]
    )
    prices = {"llama3": ModelPrice(input=0, output=0), "GPT-4o-mini": ModelPrice(input=1.0, output=2.0)}
    local = agent_from_spec(f"openai:llama3@{OPENAI_BASE}", prices)
    assert local.run(make_call()).usage.cost_usd == 0.0
    hosted = agent_from_spec(f"openai:gpt-4o-mini@{OPENAI_BASE}", prices)
    assert hosted.run(make_call()).usage.cost_usd == pytest.approx(1.0)
    assert price_table().find("gpt-4o-mini") == ModelPrice(input=0.15, output=0.6)  # the shipped table is intact


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("GPT-4.1-MINI", "gpt-4.1-mini"),
    ],
)
def test_dated_and_latest_names_find_the_bare_models_price(asked: str, found: str) -> None:
    # SPEC P3: APIs answer with dated model names
    assert price_table().find(asked) == price_table().find(found) is not None


@pytest.mark.parametrize("asked", ["gpt-4o-mini-tts", "gpt-4", "claude-opus", "my-model"])
def test_no_guessing_from_a_name_that_merely_starts_like_a_priced_one(asked: str) -> None:
    # SPEC P3: a wrong price is worse than an unknown one
    assert price_table().find(asked) is None


@pytest.mark.parametrize(
    ("text", "where"),
    [("prices: {m: {input: -1, output: 2}}", r"prices\.m\.input"), ("prices: {m: {input: 1}}", r"prices\.m\.output")],
)
def test_a_price_in_the_configuration_is_checked(tmp_path: Path, text: str, where: str) -> None:
    # Bad input gets a clear, specific error naming the key
    (tmp_path / "interlock.yml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=where):
        load_config(tmp_path / "interlock.yml")
    (tmp_path / "good.yml").write_text("prices: {m: {input: 1, output: 2.5}}\n")
    assert load_config(tmp_path / "good.yml").prices == {"m": ModelPrice(input=1, output=2.5)}
