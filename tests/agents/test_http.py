"""Chat APIs as agents: the exact requests sent, the answers read, and the retry policy (respx mocks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from app.agents.base import AgentCall
from app.agents.http import AnthropicAgent, OpenAIChatAgent
from app.engine.record import MissionStatus

PROMPT = "Decide: is the plan complete?\nAnswer with VERDICT: YES or NO.\n"
OPENAI_BASE = "http://llm.test/v1"
OPENAI_URL = f"{OPENAI_BASE}/chat/completions"
ANTHROPIC_BASE = "http://claude.test"
ANTHROPIC_URL = f"{ANTHROPIC_BASE}/v1/messages"


def make_call(**changes: Any) -> AgentCall:
    fields: dict[str, Any] = {
        "prompt": PROMPT,
        "workdir": Path("."),
        "run_id": "run-1",
        "stage": "decide",
        "capability": "decision",
        "visit": 1,
        "mission": 4,
        **changes,
    }
    return AgentCall(**fields)


def openai_ok(content: str = "VERDICT: YES", **extra: Any) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "model": "gpt-x-2025",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333},
            **extra,
        },
    )


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def openai(sleeps: Sleeps, **options: Any) -> OpenAIChatAgent:
    return OpenAIChatAgent("gpt-x", OPENAI_BASE, "sk-test", sleep=sleeps, **options)


# --- the exact requests ------------------------------------------------------------------------------


@respx.mock
def test_openai_request_is_a_bearer_post_to_chat_completions(sleeps: Sleeps) -> None:
    # ARCHITECTURE agent protocol: presets translate it for HTTP APIs (OpenAI-compatible chat completions)
    route = respx.post(OPENAI_URL).mock(return_value=openai_ok("The plan is complete.\nVERDICT: YES"))
    outcome = openai(sleeps).run(make_call())
    assert route.call_count == 1
    request = route.calls.last.request
    assert request.method == "POST"
    assert str(request.url) == OPENAI_URL
    assert request.headers["authorization"] == "Bearer sk-test"
    # issue 17: the answer is bounded (the default, as the Anthropic preset's)
    expected = {"model": "gpt-x", "max_tokens": 8192, "messages": [{"role": "user", "content": PROMPT}]}
    assert json.loads(request.content) == expected
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "The plan is complete.\nVERDICT: YES"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.usage.calls) == (321, 12, 1)
    assert outcome.model == "gpt-x-2025"
    assert outcome.agent == "openai"
    assert sleeps == []


@respx.mock
def test_openai_local_server_without_key_and_with_the_role_model(sleeps: Sleeps) -> None:
    # SPEC U1: the role names the model; a local OpenAI-compatible server needs no key
    route = respx.post("http://localhost:11434/v1/chat/completions").mock(return_value=openai_ok())
    agent = OpenAIChatAgent("default-model", "http://localhost:11434/v1/", None, sleep=sleeps)
    outcome = agent.run(make_call(model="llama-role"))
    request = route.calls.last.request
    assert "authorization" not in request.headers
    assert json.loads(request.content)["model"] == "llama-role"
    assert outcome.status is MissionStatus.DONE


@respx.mock
def test_anthropic_request_has_key_version_and_max_tokens_and_joins_text_blocks(sleeps: Sleeps) -> None:
    # ARCHITECTURE agent protocol: presets translate it for HTTP APIs (Anthropic messages)
    route = respx.post(ANTHROPIC_URL).mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "model": "claude-x-1",
                "content": [
                    {"type": "text", "text": "First part. "},
                    {"type": "tool_use", "id": "t1", "name": "noop", "input": {}},
                    {"type": "text", "text": "VERDICT: NO"},
                ],
                "usage": {"input_tokens": 77, "output_tokens": 9},
            },
        )
    )
    outcome = AnthropicAgent("claude-x", ANTHROPIC_BASE, "ak-test", sleep=sleeps).run(make_call())
    assert route.call_count == 1
    request = route.calls.last.request
    assert str(request.url) == ANTHROPIC_URL
    assert request.headers["x-api-key"] == "ak-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = json.loads(request.content)
    assert set(body) == {"model", "max_tokens", "messages"}
    assert body["model"] == "claude-x"
    assert isinstance(body["max_tokens"], int) and body["max_tokens"] > 0
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "First part. VERDICT: NO"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (77, 9)
    assert outcome.model == "claude-x-1"
    assert outcome.agent == "anthropic"


# --- retries -----------------------------------------------------------------------------------------


@respx.mock
def test_429_with_retry_after_is_retried_after_that_delay(sleeps: Sleeps) -> None:
    # ARCHITECTURE agent protocol (HTTP presets): 429 is retried, honouring retry-after
    route = respx.post(OPENAI_URL).mock(
        side_effect=[httpx.Response(429, headers={"retry-after": "7"}, json={"error": "slow down"}), openai_ok()]
    )
    outcome = openai(sleeps).run(make_call())
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "VERDICT: YES"
    assert route.call_count == 2
    assert sleeps == [7]


@respx.mock
def test_503_twice_then_200_backs_off_one_then_two_seconds(sleeps: Sleeps) -> None:
    # ARCHITECTURE agent protocol (HTTP presets): 5xx is retried with backoff
    route = respx.post(OPENAI_URL).mock(side_effect=[httpx.Response(503), httpx.Response(503), openai_ok()])
    outcome = openai(sleeps).run(make_call())
    assert outcome.status is MissionStatus.DONE
    assert route.call_count == 3
    assert sleeps == [1, 2]


@pytest.mark.parametrize("retries", [0, 2, 3])
@respx.mock
def test_always_500_fails_after_retries_plus_one_requests(sleeps: Sleeps, retries: int) -> None:
    # SPEC E1: a mission that does not end done fails, the cause taken from the worker's output
    route = respx.post(OPENAI_URL).mock(return_value=httpx.Response(500, text="upstream exploded"))
    outcome = openai(sleeps, retries=retries).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert route.call_count == retries + 1
    assert "500" in outcome.answer
    assert "upstream exploded" in outcome.answer
    assert sleeps == [2.0**n for n in range(retries)]


@respx.mock
def test_a_read_timeout_is_a_timeout_and_not_retried(sleeps: Sleeps) -> None:
    # SPEC E1: a timeout is a mission status of its own; issue 17: the server is still generating the
    # abandoned answer, so a read timeout is not sent again, and the one request is charged (SPEC P2)
    route = respx.post(OPENAI_URL).mock(side_effect=httpx.ReadTimeout("read timed out"))
    outcome = openai(sleeps, retries=2).run(make_call())
    assert outcome.status is MissionStatus.TIMEOUT
    assert route.call_count == 1
    assert "timed out" in outcome.answer and "not retried" in outcome.answer
    assert sleeps == []
    assert outcome.usage.calls == 1 and outcome.usage.cost_usd is None


@respx.mock
def test_a_timeout_then_success_is_done(sleeps: Sleeps) -> None:
    # ARCHITECTURE agent protocol (HTTP presets): network errors are retried
    route = respx.post(ANTHROPIC_URL).mock(
        side_effect=[
            httpx.ConnectTimeout("connect timed out"),
            httpx.Response(200, json={"content": [{"type": "text", "text": "ok"}]}),
        ]
    )
    outcome = AnthropicAgent("claude-x", ANTHROPIC_BASE, "ak", sleep=sleeps).run(make_call())
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "ok"
    assert route.call_count == 2
    assert sleeps == [1]


@respx.mock
def test_a_connection_error_every_time_is_failed_not_timeout(sleeps: Sleeps) -> None:
    # SPEC E1: the status says what happened; a refused connection is a failure, not a timeout
    route = respx.post(OPENAI_URL).mock(side_effect=httpx.ConnectError("connection refused"))
    outcome = openai(sleeps, retries=1).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert route.call_count == 2
    assert "connection refused" in outcome.answer


@respx.mock
def test_a_400_fails_at_once_without_retry(sleeps: Sleeps) -> None:
    # ARCHITECTURE agent protocol (HTTP presets): only 429, 5xx and network errors are retried
    route = respx.post(OPENAI_URL).mock(return_value=httpx.Response(400, json={"error": {"message": "bad model"}}))
    outcome = openai(sleeps).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert route.call_count == 1
    assert sleeps == []
    assert "400" in outcome.answer
    assert "bad model" in outcome.answer
    assert outcome.exit_code == 400


# --- unreadable answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(httpx.Response(200, text="<html>gateway says hi</html>"), id="not-json"),
        pytest.param(httpx.Response(200, json={"object": "list", "data": []}), id="no-choices"),
        pytest.param(httpx.Response(200, json={"choices": []}), id="empty-choices"),
        pytest.param(httpx.Response(200, json={"choices": [{"message": "hi"}]}), id="message-not-object"),
        pytest.param(httpx.Response(200, json=["choices"]), id="a-list"),
        pytest.param(httpx.Response(200, content=b"null", headers={"content-type": "application/json"}), id="null"),
        pytest.param(
            httpx.Response(200, json={"choices": [{"message": {"content": 42}}]}),
            id="content-not-text",
        ),
        pytest.param(
            httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}], "usage": "lots"}),
            id="usage-not-object",
        ),
    ],
)
@respx.mock
def test_openai_unreadable_200_is_failed_with_a_readable_message(sleeps: Sleeps, response: httpx.Response) -> None:
    # SPEC E1: a mission that does not end done fails with a cause a person can read
    route = respx.post(OPENAI_URL).mock(return_value=response)
    outcome = openai(sleeps).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert isinstance(outcome.answer, str)
    assert "cannot read" in outcome.answer
    assert route.call_count == 1


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(httpx.Response(200, text="not json at all"), id="not-json"),
        pytest.param(httpx.Response(200, json={"type": "message"}), id="no-content"),
        pytest.param(httpx.Response(200, json={"content": [{"type": "text", "text": 5}]}), id="text-not-string"),
        pytest.param(httpx.Response(200, json={"content": "hello"}), id="content-a-string"),
        pytest.param(
            httpx.Response(200, json={"content": ["hello"]}),
            id="blocks-not-objects",
        ),
    ],
)
@respx.mock
def test_anthropic_unreadable_200_is_failed_with_a_readable_message(sleeps: Sleeps, response: httpx.Response) -> None:
    # SPEC E1: a mission that does not end done fails with a cause a person can read
    route = respx.post(ANTHROPIC_URL).mock(return_value=response)
    outcome = AnthropicAgent("claude-x", ANTHROPIC_BASE, "ak", sleep=sleeps).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert "cannot read" in outcome.answer
    assert route.call_count == 1
