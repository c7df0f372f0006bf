"""Costs of a chat-API agent on a local run, end to end: a real OpenAI-compatible server on loopback, the
ledger, and the `money`, `journey` and `status` reports — estimates marked, unknown costs said so."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.agents.prices import ModelPrice
from app.engine.graph.model import Policy
from app.engine.graph.validate import parse_graph
from app.engine.record import ReasonCode, Status
from app.local.config import GateMode, LocalConfig
from app.local.reports import journey_rows, money_rows, render_journey, render_money, render_status
from app.local.shell import LocalShell
from tests.helpers import edge, graph, node
from tests.local.harness import make_repo

TWO_STEPS = parse_graph(
    graph(
        [node("triage", "triage"), node("judge", "review")],
        [edge("triage", "PASS", "judge"), edge("judge", "PASS", "__end__")],
        entry="triage",
    )
)


class Completions(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: answers PASS for the model asked, with 1000 prompt and 100 completion
    tokens."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        answer = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Fine.\nVERDICT: PASS"}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Completions)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def run_with(tmp_path: Path, agent: str, **config: Any) -> tuple[LocalShell, Any]:
    make_repo(tmp_path / "repo")
    shell = LocalShell(tmp_path / "repo", LocalConfig(agent=agent, **config), GateMode.STOP)
    return shell, shell.start(TWO_STEPS, "Judge it", "")


def test_a_priced_model_is_shown_as_an_estimate_everywhere(tmp_path: Path, server: str) -> None:
    # SPEC W2, W3, P3: journey, money and status show the cost; an estimate is marked with ~
    # a server on loopback is one of your own, priced by the configuration alone (issue 17): the shipped price
    # of gpt-4o-mini, given explicitly, stands in for the hosted API here
    prices = {"gpt-4o-mini": ModelPrice(input=0.15, output=0.6)}
    shell, run = run_with(tmp_path, f"openai:gpt-4o-mini@{server}", prices=prices)
    assert run.status is Status.AWAITING_MERGE
    money = render_money(money_rows(run))
    # 1000 x $0.15 + 100 x $0.60 per million tokens, twice
    assert "| total " in money and "~$0.0004" in money and "~ marks estimates" in money
    assert "unknown" not in money
    journey = render_journey(journey_rows(run, shell.store))
    assert journey.count("~$0.0002") == 2
    assert "~$0.0004 spent" in render_status(run, TWO_STEPS)


def test_a_model_without_a_price_is_unknown_not_zero_dollars(tmp_path: Path, server: str) -> None:
    # SPEC P3: an unknown cost is never shown as $0
    shell, run = run_with(tmp_path, f"openai:llama3@{server}")
    assert run.status is Status.AWAITING_MERGE  # no cost limit: nothing to hold
    assert run.ledger.unknown_costs() == 2 and run.missions[0].usage.cost_usd is None
    money = render_money(money_rows(run))
    assert "$0.0000" not in money and "unknown" in money and "give it one under `prices:`" in money
    journey = render_journey(journey_rows(run, shell.store))
    assert journey.count("| unknown") == 2 and "$" not in journey
    assert "unknown spent" in render_status(run, TWO_STEPS)


def test_with_a_cost_limit_an_unknown_cost_stops_the_run_until_the_model_has_a_price(
    tmp_path: Path, server: str
) -> None:
    # SPEC P1, P2: maxCostUsd cannot be held with a cost nobody knows: the next call is not made
    _, run = run_with(tmp_path, f"openai:llama3@{server}", policy=Policy(maxCostUsd=1.0))
    assert run.status is Status.ESCALATED and run.reason is not None
    assert run.reason.code is ReasonCode.COST_BUDGET_EXHAUSTED and "unknown" in run.reason.message
    assert [m.stage for m in run.missions] == ["triage"]
    prices = {"llama3": ModelPrice(input=0, output=0)}  # a model of your own: known to cost nothing
    _, again = run_with(tmp_path / "priced", f"openai:llama3@{server}", policy=Policy(maxCostUsd=1.0), prices=prices)
    assert again.status is Status.AWAITING_MERGE
    assert "~$0.0000" in render_money(money_rows(again))
