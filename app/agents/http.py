"""Chat APIs as agents, through httpx: any OpenAI-compatible server (hosted, vLLM, Ollama) and Anthropic.

A chat API cannot edit files, so these suit judging, triage, decisions and advice. Each request bounds the
answer (``max_tokens``: the role's ``maxTokens``, else ``DEFAULT_MAX_TOKENS``) and has a timeout; 429 and 5xx
answers and network errors are retried with backoff, honouring ``retry-after``, but a read timeout is not: the
server goes on generating the abandoned answer. A server that cannot be reached at all (refused, unknown host)
is tried once more after a short pause and then named in one line, and a hosted API without its key fails
before any request. A bound the server refuses as above the model's own limit is sent once more at that limit,
and a prompt the server says exceeds the model's context (``app/agents/overflow.py``) once more with its context
compacted harder. Every request the server received is a call in the usage (SPEC
P2). The cost is worked out from the tokens and a price table (``app/agents/prices.py``): an estimate, or
unknown — never a silent $0.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

from app.agents.base import DECISION_MAX_TOKENS, DEFAULT_MAX_TOKENS, NOT_ENFORCED, AgentCall, AgentOutcome
from app.agents.overflow import answer_limit, overflow_message, room_for_answer
from app.agents.prices import ModelPrice, PriceTable, price_table
from app.engine.cost_source import CostSource
from app.engine.record import MissionKind, MissionStatus, Usage

RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
CONNECT_RETRIES = 1  # a server that refuses or has no address is unlikely to appear within seconds
CONNECT_PAUSE_S = 1.0
OVERFLOW = "the prompt exceeds the model's context"


@dataclass(frozen=True)
class Problem:
    """Why the last attempt got no answer, in one line, and whether trying again can help."""

    text: str
    status: MissionStatus = MissionStatus.FAILED
    unreachable: bool = False
    final: bool = False
    received: bool = True  # the server got the request (all but an unreachable server or a bad URL)


class ChatAgent:
    """Shared request loop; subclasses say how to build the request and read the answer."""

    name = "chat"
    key_variable = ""  # the environment variable of the key, named when it is missing
    hosted_host = ""  # the provider's own host, which refuses every request without a key

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
        prices: PriceTable | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.retries = retries
        self.transport = transport
        self.sleep = sleep
        self.prices = (prices or price_table()).for_endpoint(self.base_url)

    def request(self, call: AgentCall) -> tuple[str, dict[str, str], dict[str, Any]]:
        raise NotImplementedError

    def read(self, data: dict[str, Any]) -> tuple[str, Usage, str | None]:
        raise NotImplementedError

    def tool_scope(self, tools: tuple[str, ...]) -> str:
        """A chat API is offered no tools by Interlock, so a role's whitelist is not enforced by it: the
        record says so rather than nothing (SPEC U1)."""
        return NOT_ENFORCED if tools else ""

    def missing_key(self) -> str | None:
        """The hosted API needs a key: say so before any request. A server of your own (vLLM, Ollama, a
        proxy) may need none."""
        if self.api_key or _host(self.base_url) != self.hosted_host:
            return None
        return f"{self.key_variable} is not set (needed by agent {self.name}:{self.model})"

    def run(self, call: AgentCall) -> AgentOutcome:
        started = time.monotonic()
        missing = self.missing_key()
        if missing is not None:
            return self._failed(call, Problem(missing, final=True), started, 0)
        tally = Tally()
        with httpx.Client(timeout=min(self.timeout_s, call.timeout_s), transport=self.transport) as client:
            answer = self._send(client, call, tally)
            limit = None if isinstance(answer, Problem) else answer_limit(answer.status_code, answer.text)
            if limit is not None and limit < self.max_tokens(call):  # the bound was above the model's own limit
                call = replace(call, max_tokens=limit)
                answer = self._send(client, call, tally)
            overflow = _overflow(answer)
            if overflow is not None:
                answer = self._retry_shorter(client, call, overflow, tally)
        if isinstance(answer, Problem):
            outcome = self._failed(call, answer, started, tally.sent)
        else:
            outcome = self._outcome(call, answer, time.monotonic() - started, tally.sent)
        return outcome.with_(sent_prompt=tally.prompt)

    def _retry_shorter(
        self, client: httpx.Client, call: AgentCall, overflow: str, tally: Tally
    ) -> httpx.Response | Problem:
        """The prompt and its answer's bound exceeded the model's context: once more, with a bound that fits
        when the server says the prompt alone fits (``room_for_answer``), else with the context compacted harder
        (``AgentCall.shorter``). No shorter prompt, or a second overflow, fails the mission naming the cause."""
        room = room_for_answer(overflow)
        if room is not None and room < self.max_tokens(call):
            answer = self._send(client, replace(call, max_tokens=room), tally)
            again = _overflow(answer)
            return Problem(f"{OVERFLOW}, even with a smaller bound on the answer: {again}") if again else answer
        shorter = call.shorter() if call.shorter is not None else None
        if not shorter or len(shorter) >= len(call.prompt):
            return Problem(f"{OVERFLOW} and there is no shorter context to retry with: {overflow}")
        tally.prompt = shorter
        answer = self._send(client, replace(call, prompt=shorter), tally)
        again = _overflow(answer)
        if again is not None:
            return Problem(f"{OVERFLOW}, even with its context cut by the compaction tiers: {again}")
        return answer

    def _send(self, client: httpx.Client, call: AgentCall, tally: Tally) -> httpx.Response | Problem:
        """The answer, or the problem of the last attempt; ``tally`` counts the requests the server received.
        Unreachable servers get one more try after a short pause, not the full backoff: a mission should not
        wait long to learn a server is down. A read timeout is not tried again: the server is still generating
        the answer nobody will read, and a second request would only queue behind it."""
        url, headers, body = self.request(call)
        problem, unreachable = Problem("no attempt made"), 0
        for attempt in range(self.retries + 1):
            try:
                response = client.post(url, headers=headers, json=body)
            except httpx.HTTPError as exc:
                problem = _problem(url, exc, self.timeout_s)
                unreachable += problem.unreachable
                tally.sent += problem.received
                if problem.final or attempt >= self.retries or unreachable > CONNECT_RETRIES:
                    break
                self.sleep(CONNECT_PAUSE_S if problem.unreachable else _backoff(attempt, None))
                continue
            tally.sent += 1
            if response.status_code in RETRYABLE and attempt < self.retries:
                self.sleep(_backoff(attempt, response.headers.get("retry-after")))
                continue
            return response
        return problem

    def max_tokens(self, call: AgentCall) -> int:
        """The bound on the answer: the role's ``maxTokens``, else the default both presets share; a decision,
        which has no role and answers one label, ``DECISION_MAX_TOKENS``."""
        if call.max_tokens:
            return call.max_tokens
        return DECISION_MAX_TOKENS if call.kind is MissionKind.DECIDE else DEFAULT_MAX_TOKENS

    def _charged(self, call: AgentCall, sent: int, unknown: bool = False) -> Usage:
        """The usage of requests that got no answer to read: each is charged (SPEC P2) with no tokens; its cost
        is unknown when the server may have generated an answer nobody read (a timeout), or has no price."""
        usage = self.prices.estimate(Usage(calls=sent, requests=sent), call.model or self.model) if sent else Usage()
        return usage.but(cost_usd=None, estimated=False, source=CostSource.UNKNOWN) if unknown and sent else usage

    def _failed(self, call: AgentCall, problem: Problem, started: float, sent: int) -> AgentOutcome:
        elapsed = round(time.monotonic() - started, 3)
        return AgentOutcome(
            status=problem.status,
            answer=problem.text,
            agent=self.name,
            model=call.model or self.model,
            duration_s=elapsed,
            usage=self._charged(call, sent, problem.status is MissionStatus.TIMEOUT).but(seconds=elapsed),
            tool_scope=self.tool_scope(call.tools),
        )

    def _outcome(self, call: AgentCall, response: httpx.Response, elapsed: float, sent: int) -> AgentOutcome:
        base = AgentOutcome(
            status=MissionStatus.FAILED,
            answer="",
            agent=self.name,
            model=call.model or self.model,
            duration_s=round(elapsed, 3),
            exit_code=response.status_code,
            usage=self._charged(call, sent).but(seconds=round(elapsed, 3)),
            tool_scope=self.tool_scope(call.tools),
        )
        if response.status_code >= 400:
            return base.with_(answer=f"{self.name} answered HTTP {response.status_code}: {response.text[:2000]}")
        try:
            answer, usage, model = self.read(response.json())
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            return base.with_(answer=f"{self.name} sent an answer Interlock cannot read ({exc}): {response.text[:500]}")
        usage = self.prices.estimate(usage.but(calls=sent, requests=sent), model, call.model or self.model)
        used = model or call.model or self.model
        done = usage.but(seconds=round(elapsed, 3))
        return base.with_(status=MissionStatus.DONE, answer=answer, usage=done, model=used)


@dataclass
class Tally:
    """The requests of one mission the server received: every one is a call charged (SPEC P2); and the prompt
    sent last, when it is not the call's (the retry of a context overflow, with its context cut)."""

    sent: int = 0
    prompt: str | None = None


def _overflow(answer: httpx.Response | Problem) -> str | None:
    if isinstance(answer, Problem):
        return None
    return overflow_message(answer.status_code, answer.text)


def _backoff(attempt: int, retry_after: str | None) -> float:
    if retry_after and retry_after.strip().isdigit():
        return min(float(retry_after), 120.0)
    return min(2.0**attempt, 30.0)


def _problem(url: str, exc: httpx.HTTPError, timeout_s: float) -> Problem:
    """One line naming what went wrong with ``url``: unreachable, slow, or a broken exchange."""
    if isinstance(exc, httpx.ConnectError):
        return Problem(f"cannot reach {url}: {_connect_cause(exc, url)}", unreachable=True, received=False)
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return Problem(f"cannot reach {url}: no connection within {timeout_s:g}s", unreachable=True, received=False)
    if isinstance(exc, httpx.TimeoutException):
        text = f"{url} timed out: no answer within {timeout_s:g}s (not retried: the server may still be generating it)"
        return Problem(text, MissionStatus.TIMEOUT, final=True)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return Problem(f"cannot reach {url}: {_one_line(str(exc))}", final=True, received=False)
    return Problem(f"{url}: {type(exc).__name__}: {_one_line(str(exc))}")


def _connect_cause(exc: httpx.ConnectError, url: str) -> str:
    text = _one_line(str(exc))
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if any(sign in lowered for sign in ("name or service", "name resolution", "nodename", "getaddrinfo", "no address")):
        return f"the host {_host(url)} was not found (DNS)"
    return re.sub(r"^\[Errno -?\d+\]\s*", "", text) or type(exc).__name__


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def _host(url: str) -> str:
    try:
        return httpx.URL(url).host
    except (httpx.InvalidURL, TypeError):
        return ""


class OpenAIChatAgent(ChatAgent):
    """``POST {base}/chat/completions``; the base URL of a local server works the same (``/v1`` included)."""

    name = "openai"
    key_variable = "OPENAI_API_KEY"
    hosted_host = "api.openai.com"

    def request(self, call: AgentCall) -> tuple[str, dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        body = {
            "model": call.model or self.model,
            self.bound_field(): self.max_tokens(call),
            "messages": [{"role": "user", "content": call.prompt}],
        }
        return f"{self.base_url}/chat/completions", headers, body

    def max_tokens(self, call: AgentCall) -> int:
        """On OpenAI's own API a decision takes the default bound too: ``max_completion_tokens`` also bounds a
        reasoning model's hidden reasoning, which can spend 512 tokens before the label is written."""
        if call.kind is MissionKind.DECIDE and not call.max_tokens and self.bound_field() == "max_completion_tokens":
            return DEFAULT_MAX_TOKENS
        return super().max_tokens(call)

    def bound_field(self) -> str:
        """OpenAI's own API refuses ``max_tokens`` for its reasoning models (gpt-5, o3: 400 ``unsupported_parameter``)
        and takes ``max_completion_tokens`` for every current model; a server of your own (vLLM, llama-cpp-python,
        Ollama) reads ``max_tokens``."""
        return "max_completion_tokens" if _host(self.base_url) == self.hosted_host else "max_tokens"

    def read(self, data: dict[str, Any]) -> tuple[str, Usage, str | None]:
        answer = data["choices"][0]["message"]["content"] or ""
        if not isinstance(answer, str):
            raise TypeError(f"message content is {type(answer).__name__}, not text")
        return answer, _token_usage(data, "prompt_tokens", "completion_tokens"), data.get("model")


class AnthropicAgent(ChatAgent):
    """``POST {base}/v1/messages`` with the ``x-api-key`` and ``anthropic-version`` headers."""

    name = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    hosted_host = "api.anthropic.com"
    version = "2023-06-01"

    def request(self, call: AgentCall) -> tuple[str, dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json", "anthropic-version": self.version}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        body = {
            "model": call.model or self.model,
            "max_tokens": self.max_tokens(call),
            "messages": [{"role": "user", "content": call.prompt}],
        }
        return f"{self.base_url}/v1/messages", headers, body

    def read(self, data: dict[str, Any]) -> tuple[str, Usage, str | None]:
        blocks = data["content"]
        answer = "".join(block.get("text", "") for block in blocks if block.get("type") == "text")
        return answer, _token_usage(data, "input_tokens", "output_tokens"), data.get("model")


def _token_usage(data: dict[str, Any], input_key: str, output_key: str) -> Usage:
    """One call's tokens from the answer's ``usage`` object, which each API names in its own words (none
    reported: zero tokens; the call is still counted)."""
    usage = data.get("usage") or {}
    return Usage(calls=1, input_tokens=int(usage.get(input_key, 0)), output_tokens=int(usage.get(output_key, 0)))


def openai_agent(
    model: str, base_url: str | None = None, prices: Mapping[str, ModelPrice] | None = None, **options: Any
) -> OpenAIChatAgent:
    url = base_url or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    return OpenAIChatAgent(model, url, os.environ.get("OPENAI_API_KEY"), prices=price_table(prices), **options)


def anthropic_agent(
    model: str, base_url: str | None = None, prices: Mapping[str, ModelPrice] | None = None, **options: Any
) -> AnthropicAgent:
    url = base_url or os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    return AnthropicAgent(model, url, os.environ.get("ANTHROPIC_API_KEY"), prices=price_table(prices), **options)
