"""The HTTP presets against a stand-in of a small local model's server (issue 17): bounded answers, context
overflows cut and retried once, read timeouts not retried, every request charged, local models not priced."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
import respx

from app.agents.base import DECISION_MAX_TOKENS, DEFAULT_MAX_TOKENS
from app.agents.http import AnthropicAgent, OpenAIChatAgent
from app.agents.overflow import MIN_ANSWER_TOKENS, overflow_message
from app.agents.prices import ModelPrice, price_table
from app.agents.spec import agent_from_spec
from app.engine.record import MissionKind, MissionStatus
from tests.agents.llm_server import StandIn, serving, tokens
from tests.agents.test_http import PROMPT, make_call
from tests.agents.test_http_errors import Sleeps

LONG = "x" * 4000  # 1000 tokens of the stand-in
SHORT = "y" * 400


def agent(url: str, sleeps: Sleeps | None = None, **options: Any) -> OpenAIChatAgent:
    return OpenAIChatAgent("gemma-3-270m", url, None, sleep=Sleeps() if sleeps is None else sleeps, **options)


def test_the_default_bound_is_sent_and_a_roles_bound_bounds_the_answer() -> None:
    # issue 17, item 1: a model that writes until its context is full is stopped by max_tokens
    stand_in = StandIn(n_ctx=2048, fill=True)
    with serving(stand_in) as url:
        unbounded = agent(url).run(make_call())
        bounded = agent(url).run(make_call(max_tokens=100))
    assert [body["max_tokens"] for body in stand_in.requests] == [DEFAULT_MAX_TOKENS, 100]
    assert bounded.status is MissionStatus.DONE and bounded.usage.output_tokens <= 100
    assert unbounded.usage.output_tokens > 1500  # the default is above this model's context: it fills it


@respx.mock
def test_the_anthropic_preset_takes_the_same_bound() -> None:
    # issue 17, item 1: both presets read one setting
    route = respx.post("http://claude.test/v1/messages").mock(
        return_value=httpx.Response(200, json={"content": [{"type": "text", "text": "ok"}]})
    )
    AnthropicAgent("claude-x", "http://claude.test", "ak").run(make_call())
    AnthropicAgent("claude-x", "http://claude.test", "ak").run(make_call(max_tokens=300))
    assert [json.loads(call.request.content)["max_tokens"] for call in route.calls] == [DEFAULT_MAX_TOKENS, 300]


@pytest.mark.parametrize("style", ["llama-cpp-python", "vllm", "openai", "llama-server"])
def test_a_context_overflow_is_retried_once_with_the_shorter_prompt(style: str) -> None:
    # issue 17, item 1; SPEC P2: both requests reached the server, both are charged
    stand_in = StandIn(n_ctx=600, style=style)
    with serving(stand_in) as url:
        outcome = agent(url).run(make_call(prompt=LONG, max_tokens=64, shorter=lambda: SHORT))
    assert outcome.status is MissionStatus.DONE and outcome.answer.endswith("VERDICT: PASS")
    assert [body["messages"][0]["content"] for body in stand_in.requests] == [LONG, SHORT]
    assert outcome.usage.calls == len(stand_in.requests) == 2
    assert outcome.usage.input_tokens == tokens(SHORT)


def test_an_overflow_the_cut_prompt_still_hits_fails_naming_the_cause_in_one_line() -> None:
    # issue 17, item 1: still too long after one cut: the mission fails with that cause, once
    stand_in = StandIn(n_ctx=50)
    with serving(stand_in) as url:
        outcome = agent(url).run(make_call(prompt=LONG, max_tokens=10, shorter=lambda: SHORT))
    assert outcome.status is MissionStatus.FAILED and "\n" not in outcome.answer
    assert outcome.answer.startswith(
        "the prompt exceeds the model's context, even with its context cut by the compaction tiers: "
        "This model's maximum context length is 50 tokens. However, you requested 110 tokens"
    )
    assert outcome.usage.calls == len(stand_in.requests) == 2


@pytest.mark.parametrize("shorter", [None, lambda: None, lambda: LONG + "more"])
def test_an_overflow_with_nothing_to_cut_fails_after_one_request(shorter: Any) -> None:
    # issue 17, item 1: no shorter context exists (a job's order, a decision, a context already cut)
    stand_in = StandIn(n_ctx=50, style="openai")
    with serving(stand_in) as url:
        outcome = agent(url).run(make_call(prompt=LONG, shorter=shorter))
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer.startswith(
        "the prompt exceeds the model's context and there is no shorter context to retry with: "
        "This model's maximum context length is 50 tokens."
    )
    assert outcome.usage.calls == len(stand_in.requests) == 1


def test_another_400_is_neither_cut_nor_retried() -> None:
    # issue 17, item 1: only the context overflow is cured by a shorter prompt
    with respx.mock:
        route = respx.post("http://llm.test/v1/chat/completions").mock(
            return_value=httpx.Response(400, json={"error": {"message": "model 'x' not found", "code": None}})
        )
        outcome = agent("http://llm.test/v1").run(make_call(shorter=lambda: SHORT))
    assert outcome.status is MissionStatus.FAILED and route.call_count == 1
    assert outcome.answer.startswith("openai answered HTTP 400") and outcome.usage.calls == 1


def test_a_slow_generation_times_out_once_and_is_charged() -> None:
    # issue 17, item 2; SPEC E1, P2: a read timeout is not sent again (the server still generates the answer)
    stand_in = StandIn(delay_s=1.5)
    sleeps = Sleeps()
    with serving(stand_in) as url:
        started = time.monotonic()
        outcome = agent(url, sleeps, timeout_s=0.3).run(make_call())
        elapsed = time.monotonic() - started
    assert outcome.status is MissionStatus.TIMEOUT and elapsed < 1.2 and sleeps == []
    assert outcome.answer.endswith(
        "timed out: no answer within 0.3s (not retried: the server may still be generating it)"
    )
    assert outcome.usage.calls == len(stand_in.requests) == 1
    assert outcome.usage.cost_usd is None  # the server generated tokens nobody saw: unknown, never $0


def test_5xx_answers_are_retried_with_backoff_and_each_is_charged() -> None:
    # issue 17, item 2; SPEC P2: calls are the requests the server received, the failed ones included
    stand_in = StandIn(fail_first=2)
    sleeps = Sleeps()
    with serving(stand_in) as url:
        outcome = agent(url, sleeps).run(make_call())
    assert outcome.status is MissionStatus.DONE and sleeps == [1.0, 2.0]
    assert outcome.usage.calls == len(stand_in.requests) == 3


def test_a_server_down_is_not_charged() -> None:
    # SPEC P2: a request nobody received is no call
    with serving(StandIn()) as url:
        pass  # the port is closed again
    outcome = agent(url).run(make_call())
    assert outcome.status is MissionStatus.FAILED and outcome.usage.calls == 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (StandIn(n_ctx=2048).refusal(2100, 34), "This model's maximum context length is 2048 tokens."),
        (StandIn(n_ctx=2048, style="vllm").refusal(1110, 1024), "However, you requested 2134 tokens"),
        (StandIn(n_ctx=8192, style="openai").refusal(9000, None), "your messages resulted in 9000 tokens"),
        (StandIn(n_ctx=2048, style="llama-server").refusal(3000, 10), "exceeds the available context size"),
        (
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 208310 tokens > 200000 maximum",
                },
            },
            "prompt is too long",
        ),
    ],
)
def test_the_real_overflow_shapes_are_recognised(body: dict[str, Any], expected: str) -> None:
    # issue 17, item 1: OpenAI's code `context_length_exceeded`, vLLM's, llama.cpp's and Anthropic's words
    message = overflow_message(400, json.dumps(body))
    assert message is not None and expected in message


@pytest.mark.parametrize(
    ("status", "text"),
    [(400, '{"error": {"message": "Invalid value for temperature"}}'), (500, "maximum context length"), (400, "[]")],
)
def test_other_answers_are_no_overflow(status: int, text: str) -> None:
    assert overflow_message(status, text) is None


def test_a_local_servers_model_is_priced_only_by_the_configuration() -> None:
    # issue 17, item 4; SPEC P3: a model on a server of your own costs what you say, 0 included; never $0 by default
    stand_in = StandIn(answer=lambda stage, prompt: "ok")
    with serving(stand_in) as url:
        shipped_name = agent_from_spec(f"openai:gpt-4o-mini@{url}").run(make_call())
        priced = {"gpt-4o-mini": ModelPrice(input=0, output=0)}
        free = agent_from_spec(f"openai:gpt-4o-mini@{url}", priced).run(make_call())
    assert shipped_name.usage.cost_usd is None and shipped_name.usage.estimated is False
    assert free.usage.cost_usd == 0.0 and free.usage.estimated is True
    table = price_table()
    assert table.for_endpoint("https://api.openai.com/v1").find("gpt-4o-mini") is not None
    for own in ("http://localhost:11434/v1", "http://10.1.2.3:8000/v1", "http://[::1]:8080/v1"):
        assert table.for_endpoint(own).find("gpt-4o-mini") is None, own


@pytest.mark.parametrize("style", ["vllm", "openai"])
def test_a_prompt_that_fits_is_sent_again_with_the_bound_its_context_leaves(style: str) -> None:
    # issue 17, item 1: "you requested 9240 tokens (1048 in the messages, 8192 in the completion)": the prompt
    # fits, the default bound does not; the one retry keeps the prompt whole and asks for what is left
    stand_in = StandIn(n_ctx=2048, style="vllm")
    with serving(stand_in) as url:
        outcome = agent(url).run(make_call(prompt=LONG, shorter=lambda: SHORT))
    assert [body["max_tokens"] for body in stand_in.requests] == [DEFAULT_MAX_TOKENS, 2048 - tokens(LONG)]
    assert [body["messages"][0]["content"] for body in stand_in.requests] == [LONG, LONG]
    assert outcome.status is MissionStatus.DONE and outcome.usage.calls == 2  # SPEC P2: both charged


def test_a_prompt_that_leaves_no_room_for_an_answer_is_cut_instead() -> None:
    # under MIN_ANSWER_TOKENS of room, a smaller bound would leave no answer worth reading: the context is cut
    stand_in = StandIn(n_ctx=tokens(LONG) + MIN_ANSWER_TOKENS - 1, style="vllm")
    with serving(stand_in) as url:
        outcome = agent(url).run(make_call(prompt=LONG, max_tokens=512, shorter=lambda: SHORT))
    assert [body["messages"][0]["content"] for body in stand_in.requests] == [LONG, SHORT]
    assert outcome.status is MissionStatus.DONE


def test_a_decision_is_bounded_by_its_own_default() -> None:
    # issue 17: a decision has no role to set maxTokens; it answers one label, so it asks for little
    stand_in = StandIn(n_ctx=2048, style="vllm")
    with serving(stand_in) as url:
        decided = agent(url).run(make_call(kind=MissionKind.DECIDE))
        worked = agent(url).run(make_call(kind=MissionKind.DELIVER))
    bounds = [body["max_tokens"] for body in stand_in.requests]
    assert bounds == [DECISION_MAX_TOKENS, DEFAULT_MAX_TOKENS, 2048 - tokens(PROMPT)]  # the worker's bound is refit
    assert decided.status is MissionStatus.DONE and decided.usage.calls == 1 and worked.usage.calls == 2
