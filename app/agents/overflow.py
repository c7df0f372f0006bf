"""Telling a context overflow from any other refusal of a chat API, in the words the servers really use, and
whether the prompt itself fits (then only the answer's bound was too large: ``room_for_answer``).

Why: a prompt longer than the model's context is the one HTTP 400 that a shorter prompt can cure, so the agent
retries it once with the context compacted harder (``AgentCall.shorter``) and fails any other 400 at once. The
shapes recognised, as each server sends them:

- OpenAI: ``{"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages
  resulted in 9000 tokens. ...", "type": "invalid_request_error", "code": "context_length_exceeded"}}``;
- llama-cpp-python's server: the same ``code``, with "… However, you requested 2134 tokens (1110 in the messages,
  1024 in the completion). …";
- vLLM: ``{"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you
  requested 2134 tokens …", "type": "BadRequestError", "code": 400}``;
- llama.cpp's ``llama-server``: ``{"error": {"code": 400, "message": "the request exceeds the available context
  size, try increasing it", "type": "exceed_context_size_error"}}``;
- Anthropic: ``{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long:
  208310 tokens > 200000 maximum"}}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
OVERFLOW_WORDS = re.compile(
    r"maximum context length|context window|exceeds? the (?:available )?context|context size|prompt is too long",
    re.IGNORECASE,
)


CONTEXT_LENGTH = re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE)
PROMPT_LENGTH = re.compile(r"\((\d+) in the messages,", re.IGNORECASE)
MIN_ANSWER_TOKENS = 64  # a bound below this leaves no room for an answer worth reading: the context is cut instead


def room_for_answer(message: str) -> int | None:
    """The tokens the model's context leaves for the answer beside the prompt, when the server's words give both
    (vLLM's, llama-cpp-python's and OpenAI's "maximum context length is 2048 tokens. However, you requested 2134
    tokens (1110 in the messages, 1024 in the completion)"): then the prompt fits and only the bound was too
    large. ``None`` when the words do not say, or the prompt leaves under ``MIN_ANSWER_TOKENS``."""
    context, prompt = CONTEXT_LENGTH.search(message), PROMPT_LENGTH.search(message)
    if context is None or prompt is None:
        return None
    room = int(context.group(1)) - int(prompt.group(1))
    return room if room >= MIN_ANSWER_TOKENS else None


ANSWER_LIMIT = re.compile(
    r"supports at most (\d+) completion tokens|> (\d+), which is the maximum allowed number of output tokens",
    re.IGNORECASE,
)


def answer_limit(status: int, text: str) -> int | None:
    """The largest bound the model takes, when the server refused the one sent as above it (OpenAI: "max_tokens
    is too large: 8192. This model supports at most 4096 completion tokens"; Anthropic: "max_tokens: 8192 > 4096,
    which is the maximum allowed number of output tokens for claude-3-haiku-20240307"): the request goes once more
    with it. ``None`` for any other answer, or a limit under ``MIN_ANSWER_TOKENS``."""
    if status != 400:
        return None
    found = ANSWER_LIMIT.search(_one_line(str(_error_object(text).get("message") or "")))
    if found is None:
        return None
    limit = int(found.group(1) or found.group(2))
    return limit if limit >= MIN_ANSWER_TOKENS else None


def overflow_message(status: int, text: str) -> str | None:
    """The server's own words when an answer of ``status`` with body ``text`` says the prompt exceeds the
    model's context; ``None`` for any other answer."""
    if status not in (400, 413):
        return None
    error = _error_object(text)
    message = _one_line(str(error.get("message") or text))
    codes = {str(error.get(key)) for key in ("code", "type")}
    if codes & OVERFLOW_CODES or OVERFLOW_WORDS.search(message):
        return message or "the prompt exceeds the model's context"
    return None


def _error_object(text: str) -> dict[str, Any]:
    """The error object of an answer: ``error`` when it holds one (OpenAI, llama.cpp, Anthropic), else the
    answer itself (vLLM); empty for an answer that is no JSON object."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    inner = data.get("error")
    return inner if isinstance(inner, dict) else data


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
