"""Chat-API agents that cannot work say why in one line: an unreachable server, a missing key."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
import respx

from app.agents.http import OpenAIChatAgent
from app.agents.spec import agent_from_spec
from app.engine.record import MissionStatus
from tests.agents.test_http import make_call

DNS = "the host llm.test was not found (DNS)"


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def closed_port() -> int:
    """A loopback port nothing listens on: bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_closed_local_port_is_named_in_one_line_after_one_short_retry() -> None:
    # SPEC E1: the mission fails with a cause a person can read; no long silent retrying
    port = closed_port()
    sleeps = Sleeps()
    agent = OpenAIChatAgent("llama3", f"http://127.0.0.1:{port}/v1", None, sleep=sleeps)
    outcome = agent.run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer == f"cannot reach http://127.0.0.1:{port}/v1/chat/completions: connection refused"
    assert sleeps == [1.0]  # one more try after a second, not 1 + 2 + 4 seconds of backoff


def test_a_dead_endpoint_named_in_the_agent_spec_fails_within_two_seconds() -> None:
    # SPEC E1: `openai:MODEL@URL` with nothing listening ends quickly, with real sleeps
    port = closed_port()
    started = time.monotonic()
    outcome = agent_from_spec(f"openai:gpt-4o-mini@http://127.0.0.1:{port}/v1").run(make_call())
    assert time.monotonic() - started < 2.5
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer.endswith(": connection refused") and "\n" not in outcome.answer


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (httpx.ConnectError("[Errno -2] Name or service not known"), DNS),
        (httpx.ConnectError("[Errno -3] Temporary failure in name resolution"), DNS),
        (httpx.ConnectError("[Errno 101] Network is unreachable"), "Network is unreachable"),
        (httpx.ConnectTimeout("timed out"), "no connection within 120s"),
    ],
)
@respx.mock
def test_connection_failures_name_the_url_and_the_cause(error: Exception, cause: str) -> None:
    # SPEC E1: one line naming what is wrong
    sleeps = Sleeps()
    route = respx.post("http://llm.test/v1/chat/completions").mock(side_effect=error)
    outcome = OpenAIChatAgent("m", "http://llm.test/v1", "sk", sleep=sleeps).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer == f"cannot reach http://llm.test/v1/chat/completions: {cause}"
    assert route.call_count == 2 and sleeps == [1.0]


def test_a_base_url_without_a_scheme_fails_at_once() -> None:
    # Bad input gets a clear, specific error; retrying cannot help it
    sleeps = Sleeps()
    outcome = OpenAIChatAgent("m", "localhost:11434/v1", None, sleep=sleeps).run(make_call())
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer.startswith("cannot reach localhost:11434/v1/chat/completions: ")
    assert sleeps == []


@pytest.mark.parametrize(
    ("spec", "variable", "base"),
    [
        ("openai:gpt-4o", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    ],
)
@respx.mock(assert_all_mocked=True)
def test_a_hosted_api_without_its_key_fails_before_any_request(
    monkeypatch: pytest.MonkeyPatch, spec: str, variable: str, base: str
) -> None:
    # SPEC E1: the cause named, not a DNS or 401 error after a request that could not succeed
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv(base, raising=False)
    outcome = agent_from_spec(spec).run(make_call())  # any request would raise: nothing is mocked
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer == f"{variable} is not set (needed by agent {spec})"


@respx.mock
def test_a_server_of_your_own_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC U1: a local OpenAI-compatible server (Ollama, vLLM) works without a key
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    route = respx.post("http://127.0.0.1:11434/v1/chat/completions").mock(
        return_value=httpx.Response(200, json={"choices": [{"message": {"content": "VERDICT: YES"}}]})
    )
    outcome = agent_from_spec("openai:llama3@http://127.0.0.1:11434/v1").run(make_call())
    assert outcome.status is MissionStatus.DONE and route.call_count == 1
