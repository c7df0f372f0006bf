"""Issue 17 attacked: "a server of your own" (priced by the configuration alone, never by the shipped table) as
the host is written in a base URL. Every spelling of an address the resolver takes to a loopback one is one —
IPv4's short and numeric forms (`127.1`, `2130706433`, `0x7f000001`) — and a name that only looks local is not."""

from __future__ import annotations

import pytest

from app.agents.prices import is_own_server
from app.agents.spec import agent_from_spec
from tests.agents.llm_server import StandIn, serving
from tests.agents.test_http import make_call


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f000001", "127.0.0.1"])
def test_every_spelling_of_a_loopback_host_is_a_server_of_your_own(host: str) -> None:
    # issue 17, item 4; SPEC P3: the same server, reached, is priced the same: unknown until the configuration says
    stand_in = StandIn(answer=lambda stage, prompt: "ok")
    with serving(stand_in) as url:
        spelled = url.replace("127.0.0.1", host)
        outcome = agent_from_spec(f"openai:gpt-4o-mini@{spelled}").run(make_call())
    assert outcome.answer == "ok" and len(stand_in.requests) == 1, outcome.answer  # it reached the stand-in
    assert is_own_server(spelled) and outcome.usage.cost_usd is None, spelled


@pytest.mark.parametrize(
    "url",
    ["http://localhost.evil.com/v1", "http://127.0.0.1.nip.io/v1", "http://127.0.0.1@evil.com/v1", "https://1.1/v1"],
)
def test_a_host_that_only_looks_local_is_not(url: str) -> None:
    assert not is_own_server(url)
