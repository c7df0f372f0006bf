"""Issue 17 attacked: a bound above what the model may write at all is refused with HTTP 400 in the provider's
words — OpenAI's "max_tokens is too large: 8192. This model supports at most 4096 completion tokens" (gpt-4-turbo,
gpt-3.5-turbo, which took no bound before issue 17 and worked), Anthropic's "max_tokens: 8192 > 4096, which is the
maximum allowed number of output tokens for claude-3-haiku-20240307" (a model of the shipped price table). The
server names the largest bound it takes: the request is sent once more with it, and both requests are charged."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from app.agents.http import AnthropicAgent, OpenAIChatAgent
from app.agents.overflow import answer_limit
from app.engine.record import MissionStatus
from tests.agents.test_http import make_call
from tests.agents.test_readme_http_presets import paragraph, quoted

OPENAI = (
    "max_completion_tokens is too large: {0}. This model supports at most 4096 completion tokens, whereas you "
    "provided {0}."
)
ANTHROPIC = "max_tokens: {0} > 4096, which is the maximum allowed number of output tokens for claude-3-haiku-20240307"


def capped(field: str, shape: str) -> respx.types.SideEffectTypes:
    def answer(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)[field]
        if asked > 4096:
            error = {"message": shape.format(asked), "type": "invalid_request_error"}
            return httpx.Response(400, json={"type": "error", "error": error})
        if field == "max_tokens":
            return httpx.Response(200, json={"content": [{"type": "text", "text": f"at most {asked}"}]})
        return httpx.Response(200, json={"choices": [{"message": {"content": f"at most {asked}"}}]})

    return answer


@respx.mock
def test_openais_too_large_bound_is_sent_again_at_the_models_own_limit() -> None:
    # issue 17, item 1; SPEC P2: both requests reached the server, both are charged
    route = respx.post("https://api.openai.com/v1/chat/completions").mock(
        side_effect=capped("max_completion_tokens", OPENAI)
    )
    outcome = OpenAIChatAgent("gpt-4-turbo", "https://api.openai.com/v1", "sk-x", sleep=lambda _: None).run(make_call())
    assert (outcome.status, outcome.answer) == (MissionStatus.DONE, "at most 4096")
    assert outcome.usage.calls == outcome.usage.requests == len(route.calls) == 2


@respx.mock
def test_anthropics_too_large_bound_is_sent_again_at_the_models_own_limit() -> None:
    route = respx.post("https://api.anthropic.com/v1/messages").mock(side_effect=capped("max_tokens", ANTHROPIC))
    agent = AnthropicAgent("claude-3-haiku", "https://api.anthropic.com", "ak", sleep=lambda _: None)
    outcome = agent.run(make_call(max_tokens=6000))
    assert (outcome.status, outcome.answer, len(route.calls)) == (MissionStatus.DONE, "at most 4096", 2)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps(
            {"error": {"message": "max_tokens: 8192 > 10, which is the maximum allowed number of output tokens"}}
        ),
        json.dumps({"error": {"message": "This model supports at most " + "9" * 5000 + " completion tokens"}}),
    ],
)
def test_no_usable_limit_is_read_from_other_words(text: str) -> None:
    # a limit below an answer worth reading, or none that can be read, is no retry
    assert answer_limit(400, text) is None


def test_the_readme_says_a_too_large_bound_is_sent_again() -> None:
    text = paragraph("Bounded answers")
    assert "A bound the provider refuses as above the model's own limit" in text
    for words in (quoted(text, "This model supports at most"), quoted(text, "max_tokens: 8192 > 4096")):
        assert answer_limit(400, json.dumps({"error": {"message": words.replace("…", "")}})) == 4096
