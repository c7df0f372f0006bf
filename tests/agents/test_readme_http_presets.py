"""What the README's paragraphs on HTTP agents say about real models (issue 17) is what the agents do: the
examples and messages it quotes are taken from it and checked against the code's own behaviour."""

from __future__ import annotations

import re

import httpx
import respx
import yaml

from app.agents.base import DECISION_MAX_TOKENS, DEFAULT_MAX_TOKENS
from app.agents.http import OpenAIChatAgent
from app.agents.overflow import OVERFLOW_CODES, overflow_message, room_for_answer
from app.agents.prices import ModelPrice
from app.agents.spec import agent_from_spec
from app.engine.record import MissionStatus
from app.engine.team import Role
from app.github.config import parse_config
from tests.agents.llm_server import StandIn, serving
from tests.agents.test_http import make_call
from tests.helpers import doc

README = doc("local/agents.md")


def paragraph(title: str) -> str:
    """The README paragraph that starts with ``**title**``, its lines joined by spaces."""
    start = README.index(f"**{title}**")
    return " ".join(README[start : README.index("\n\n", start)].split())


def quoted(text: str, starting: str) -> str:
    """The text in backticks in ``text`` that starts with ``starting``."""
    return next(code for code in re.findall(r"`([^`]+)`", text) if code.startswith(starting))


@respx.mock
def test_the_timeout_sentence_quotes_the_agents_own_line() -> None:
    # issue 17, item 2: a read timeout is not retried
    text = paragraph("HTTP agents")
    assert "A read timeout is not retried" in text
    line = quoted(text, "http://127.0.0.1:8080/v1/chat/completions timed out")
    route = respx.post("http://127.0.0.1:8080/v1/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    outcome = OpenAIChatAgent("m", "http://127.0.0.1:8080/v1", None, sleep=lambda _: None).run(make_call())
    assert (outcome.status, outcome.answer, route.call_count) == (MissionStatus.TIMEOUT, line, 1)


def test_the_bound_sentence_names_the_default_and_a_role_example_that_reaches_the_request() -> None:
    # issue 17, item 1: the role's maxTokens, else the default, locally and in .github/interlock.yml
    text = paragraph("Bounded answers")
    decision = f"a decision, which has no role and answers one label, {DECISION_MAX_TOKENS}."
    assert f"else {DEFAULT_MAX_TOKENS}; {decision}" in text
    role = Role.model_validate(yaml.safe_load(quoted(text, "{name: triager")))
    assert role.max_tokens == 512
    repo = parse_config(f"teams: {{core: {{roles: [{quoted(text, '{name: triager')}]}}}}".encode())
    assert repo.teams["core"].roles[0].max_tokens == 512
    stand_in = StandIn(fill=True)
    with serving(stand_in) as url:
        outcome = agent_from_spec(f"openai:gemma-3-270m@{url}").run(make_call(max_tokens=role.max_tokens))
    assert stand_in.requests[0]["max_tokens"] == 512 and outcome.usage.output_tokens <= 512


def test_the_overflow_paragraph_names_the_shapes_recognised_and_the_agents_own_line() -> None:
    # issue 17, item 1
    text = paragraph("Context overflows.")
    for code in OVERFLOW_CODES:
        assert f"`{code}`" in text
    vllm = quoted(text, "This model's maximum context length is 2048")
    assert overflow_message(400, vllm.replace("…", "")) is not None
    assert overflow_message(400, '{"error": {"message": "prompt is too long: 3 tokens > 2 maximum"}}') is not None
    stand_in = StandIn(n_ctx=50)
    with serving(stand_in) as url:
        failed = OpenAIChatAgent("m", url, None).run(make_call(prompt="x" * 400, shorter=lambda: "y" * 300))
    line = quoted(text, "the prompt exceeds the model's context").removesuffix("…")
    assert failed.answer.startswith(line) and len(stand_in.requests) == 2
    assert "sent once more" in text and "fails at the first overflow a smaller bound cannot cure" in text
    assert failed.sent_prompt == "y" * 300  # the record's `sent_prompt` (tests/local/test_small_model_run.py)
    assert "The mission record keeps the prompt sent in the end as `sent_prompt`" in text
    # the prompt that fits goes again whole with the bound its context leaves (test_http_real_models.py)
    fits = quoted(text, "… (1048 in the messages")
    assert room_for_answer(f"maximum context length is 2048 tokens. However, you requested 9240 tokens {fits[2:]}") == (
        2048 - 1048
    )
    assert "writes the shorter prompt into the mission's order" in text  # tests/runner/test_order_bounds.py


def test_the_charging_paragraph_says_what_the_usage_counts() -> None:
    # SPEC P2: the behaviour is in test_http_real_models.py and tests/local/test_small_model_run.py
    text = paragraph("Every request is charged")
    assert "the ledger's calls are the requests the server received" in text
    stand_in = StandIn(fail_first=1)
    with serving(stand_in) as url:
        outcome = OpenAIChatAgent("m", url, None, sleep=lambda _: None).run(make_call())
    assert outcome.usage.calls == len(stand_in.requests) == 2


def test_the_price_sentence_of_a_server_of_your_own() -> None:
    # issue 17, item 4; SPEC P3
    start = README.index("A server of your own — a base URL on `localhost`")
    text = " ".join(README[start : README.index("\n\n", start)].split())
    example = yaml.safe_load(quoted(text, "prices: "))["prices"]
    prices = {name: ModelPrice.model_validate(price) for name, price in example.items()}
    stand_in = StandIn(answer=lambda stage, prompt: "ok")
    with serving(stand_in) as url:
        unknown = agent_from_spec(f"openai:gpt-4o-mini@{url}").run(make_call())
        known = agent_from_spec(f"openai:gemma-3-270m@{url}", prices).run(make_call())
    assert unknown.usage.cost_usd is None and known.usage.cost_usd == 0.0
