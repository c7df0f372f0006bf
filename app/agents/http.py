"""Chat APIs as agents, through httpx: any OpenAI-compatible server (hosted, vLLM, Ollama) and Anthropic.

A chat API cannot edit files, so these suit judging, triage, decisions and advice. Each request has a
timeout; 429 and 5xx answers and network errors are retried with backoff, honouring ``retry-after``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import httpx

from app.agents.base import AgentCall, AgentOutcome
from app.engine.record import MissionStatus, Usage

RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class ChatAgent:
    """Shared request loop; subclasses say how to build the request and read the answer."""

    name = "chat"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float = 120.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.retries = retries
        self.transport = transport
        self.sleep = sleep

    def request(self, call: AgentCall) -> tuple[str, dict[str, str], dict[str, Any]]:
        raise NotImplementedError

    def read(self, data: dict[str, Any]) -> tuple[str, Usage, str | None]:
        raise NotImplementedError

    def run(self, call: AgentCall) -> AgentOutcome:
        url, headers, body = self.request(call)
        started = time.monotonic()
        problem = "no attempt made"
        with httpx.Client(timeout=min(self.timeout_s, call.timeout_s), transport=self.transport) as client:
            for attempt in range(self.retries + 1):
                try:
                    response = client.post(url, headers=headers, json=body)
                except httpx.TimeoutException:
                    problem = f"timed out after {self.timeout_s:g}s"
                    self._pause(attempt, None)
                    continue
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                    self._pause(attempt, None)
                    continue
                if response.status_code in RETRYABLE and attempt < self.retries:
                    problem = f"HTTP {response.status_code}"
                    self._pause(attempt, response.headers.get("retry-after"))
                    continue
                return self._outcome(call, response, time.monotonic() - started)
        status = MissionStatus.TIMEOUT if problem.startswith("timed out") else MissionStatus.FAILED
        return AgentOutcome(
            status=status,
            answer=f"{self.name} request failed: {problem}",
            agent=self.name,
            model=self.model,
            duration_s=time.monotonic() - started,
        )

    def _pause(self, attempt: int, retry_after: str | None) -> None:
        if attempt >= self.retries:
            return
        delay = min(2.0**attempt, 30.0)
        if retry_after and retry_after.strip().isdigit():
            delay = min(float(retry_after), 120.0)
        self.sleep(delay)

    def _outcome(self, call: AgentCall, response: httpx.Response, elapsed: float) -> AgentOutcome:
        base = AgentOutcome(
            status=MissionStatus.FAILED,
            answer="",
            agent=self.name,
            model=self.model,
            duration_s=round(elapsed, 3),
            exit_code=response.status_code,
        )
        if response.status_code >= 400:
            return base.with_(answer=f"{self.name} answered HTTP {response.status_code}: {response.text[:2000]}")
        try:
            answer, usage, model = self.read(response.json())
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            return base.with_(answer=f"{self.name} sent an answer Interlock cannot read ({exc}): {response.text[:500]}")
        usage = usage.but(seconds=round(elapsed, 3))
        return base.with_(status=MissionStatus.DONE, answer=answer, usage=usage, model=model or self.model)


class OpenAIChatAgent(ChatAgent):
    """``POST {base}/chat/completions``; the base URL of a local server works the same (``/v1`` included)."""

    name = "openai"

    def request(self, call: AgentCall) -> tuple[str, dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        body = {"model": call.model or self.model, "messages": [{"role": "user", "content": call.prompt}]}
        return f"{self.base_url}/chat/completions", headers, body

    def read(self, data: dict[str, Any]) -> tuple[str, Usage, str | None]:
        answer = data["choices"][0]["message"]["content"] or ""
        if not isinstance(answer, str):
            raise TypeError(f"message content is {type(answer).__name__}, not text")
        usage = data.get("usage") or {}
        return (
            answer,
            Usage(
                calls=1,
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            data.get("model"),
        )


class AnthropicAgent(ChatAgent):
    """``POST {base}/v1/messages`` with the ``x-api-key`` and ``anthropic-version`` headers."""

    name = "anthropic"
    version = "2023-06-01"
    max_tokens = 8192

    def request(self, call: AgentCall) -> tuple[str, dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json", "anthropic-version": self.version}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        body = {
            "model": call.model or self.model,
            "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": call.prompt}],
        }
        return f"{self.base_url}/v1/messages", headers, body

    def read(self, data: dict[str, Any]) -> tuple[str, Usage, str | None]:
        blocks = data["content"]
        answer = "".join(block.get("text", "") for block in blocks if block.get("type") == "text")
        usage = data.get("usage") or {}
        return (
            answer,
            Usage(
                calls=1,
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
            ),
            data.get("model"),
        )


def openai_agent(model: str, base_url: str | None = None, **options: Any) -> OpenAIChatAgent:
    url = base_url or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    return OpenAIChatAgent(model, url, os.environ.get("OPENAI_API_KEY"), **options)


def anthropic_agent(model: str, base_url: str | None = None, **options: Any) -> AnthropicAgent:
    url = base_url or os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    return AnthropicAgent(model, url, os.environ.get("ANTHROPIC_API_KEY"), **options)
