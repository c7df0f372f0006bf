"""Issue 17 attacked: OpenAI's own API refuses `max_tokens` for its reasoning models (gpt-5, o3, o4-mini: 400
`unsupported_parameter`, "Use 'max_completion_tokens' instead"), which took no bound before issue 17 and worked.
Its bound is `max_completion_tokens`, which every current model of that API takes; a server of your own (vLLM,
llama-cpp-python, Ollama) reads `max_tokens`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from app.agents.base import DECISION_MAX_TOKENS, DEFAULT_MAX_TOKENS
from app.agents.http import OpenAIChatAgent
from app.engine.record import MissionKind, MissionStatus
from tests.agents.llm_server import StandIn, serving
from tests.agents.test_http import make_call
from tests.agents.test_readme_http_presets import paragraph

REFUSAL = {
    "error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
        "instead.",
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }
}


def openai_api(request: httpx.Request) -> httpx.Response:
    """api.openai.com as its reasoning models answer: `max_tokens` refused, `max_completion_tokens` kept."""
    body: dict[str, Any] = json.loads(request.content)
    if "max_tokens" in body:
        return httpx.Response(400, json=REFUSAL)
    text = f"bounded at {body['max_completion_tokens']}"
    return httpx.Response(200, json={"choices": [{"message": {"content": text}}], "model": body["model"]})


@pytest.mark.parametrize("model", ["gpt-5", "o4-mini"])
@respx.mock
def test_openais_own_api_gets_the_bound_its_reasoning_models_take(model: str) -> None:
    # issue 17, item 1: bounded, and not refused
    respx.post("https://api.openai.com/v1/chat/completions").mock(side_effect=openai_api)
    outcome = OpenAIChatAgent(model, "https://api.openai.com/v1", "sk-test").run(make_call(max_tokens=300))
    assert (outcome.status, outcome.answer) == (MissionStatus.DONE, "bounded at 300")
    default = OpenAIChatAgent(model, "https://api.openai.com/v1", "sk-test").run(make_call())
    assert default.answer == f"bounded at {DEFAULT_MAX_TOKENS}"


def test_a_server_of_your_own_gets_max_tokens() -> None:
    # issue 17, item 1: llama-cpp-python's server bounds the answer by `max_tokens`
    stand_in = StandIn()
    with serving(stand_in) as url:
        OpenAIChatAgent("gemma-3-270m", url, None).run(make_call(max_tokens=77))
    assert stand_in.requests[0]["max_tokens"] == 77 and "max_completion_tokens" not in stand_in.requests[0]


def test_the_readme_names_the_field_openais_api_takes() -> None:
    text = paragraph("Bounded answers")
    assert "OpenAI's own API (`api.openai.com`) takes it as `max_completion_tokens`" in text


def reasoning_model(request: httpx.Request) -> httpx.Response:
    """A reasoning model of OpenAI's API: `max_completion_tokens` bounds its hidden reasoning (1,000 tokens here)
    and its answer together; spent on the reasoning, the answer is empty and the finish reason `length`."""
    bound = json.loads(request.content)["max_completion_tokens"]
    text, finish = ("BUG", "stop") if bound > 1000 else ("", "length")
    details = {"completion_tokens_details": {"reasoning_tokens": min(bound, 1000)}}
    choice = {"message": {"content": text}, "finish_reason": finish}
    return httpx.Response(200, json={"choices": [choice], "usage": {"completion_tokens": bound, **details}})


@respx.mock
def test_a_decision_on_openais_api_leaves_a_reasoning_model_room_for_its_label() -> None:
    # issue 17, SPEC V8: 512 tokens would be spent on the reasoning before the label is written
    respx.post("https://api.openai.com/v1/chat/completions").mock(side_effect=reasoning_model)
    agent = OpenAIChatAgent("gpt-5-mini", "https://api.openai.com/v1", "sk-test")
    assert agent.run(make_call(kind=MissionKind.DECIDE)).answer == "BUG"


def test_a_decision_on_a_server_of_your_own_keeps_the_small_bound() -> None:
    # issue 17: a small model's context needs it
    stand_in = StandIn()
    with serving(stand_in) as url:
        OpenAIChatAgent("gemma-3-270m", url, None).run(make_call(kind=MissionKind.DECIDE))
    assert stand_in.requests[0]["max_tokens"] == DECISION_MAX_TOKENS


def test_the_readme_says_a_decision_on_openais_api_takes_the_default() -> None:
    text = paragraph("Bounded answers")
    assert f"There a decision takes {DEFAULT_MAX_TOKENS} too: a reasoning model counts its reasoning in it." in text
