"""A whole local run on a small model's server (issue 17): `interlock run` as a real process, its agent
`openai:MODEL@http://127.0.0.1:PORT/v1`, and a stand-in OpenAI-compatible server on loopback that keeps a
small context and writes until it is full unless bounded (tests/agents/llm_server.py).

What is checked is what the issue found wrong: each role's bound reaches the server, a review whose prompt
overflows the context is cut and sent once more, a prompt still too long fails the run with that cause in one
line, a slow generation is not retried, the ledger's calls are the requests the server received, and no
traceback is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.store.journal import mission_path
from tests.agents.llm_server import StandIn, serving
from tests.helpers import ROOT, edge, graph, node
from tests.local.harness import make_repo
from tests.local.test_decide_prose import stored

DRAFT_REVIEW = graph(
    [node("draft", "writing"), node("review", "review")],
    [edge("draft", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "draft")],
    entry="draft",
)
MODEL = "gemma-3-270m"
ROLES = [
    {"name": "writer", "capabilities": ["writing"], "maxTokens": 900},
    {"name": "reviewer", "capabilities": ["review"], "maxTokens": 64},
]


def interlock(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "app", *args, "--repo", str(tmp / "repo")],
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def run_on(tmp: Path, url: str, **config: Any) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """`interlock run` of the draft → review loop with the model at ``url``: the run, its stderr, its ledger."""
    make_repo(tmp / "repo")
    (tmp / "graph.json").write_text(json.dumps(DRAFT_REVIEW))
    settings = {"agent": f"openai:{MODEL}@{url}", "gates": "approve", "team": {"roles": ROLES}, **config}
    (tmp / "config.json").write_text(json.dumps(settings))
    started = interlock(
        tmp, "run", str(tmp / "graph.json"), "--request", "Write a haiku", "--run-id", "r1",
        "--config", str(tmp / "config.json"), "--json",
    )  # fmt: skip
    money = interlock(tmp, "money", "r1", "--json")
    assert money.returncode == 0, money.stderr
    return json.loads(started.stdout), started.stderr, json.loads(money.stdout)


def test_an_overflowing_review_is_cut_once_and_the_ledger_counts_every_request(tmp_path: Path) -> None:
    # issue 17, items 1, 2, 4; SPEC P2, C3: the draft fills its bound, the review's prompt then exceeds the
    # context (1,147 tokens of 1,100), is sent again with the draft cut to 800 bytes, and the run goes on
    stand_in = StandIn(n_ctx=1100, fill=True)
    with serving(stand_in) as url:
        run, stderr, ledger = run_on(
            tmp_path, url, context={"cut_bytes": 800}, prices={MODEL: {"input": 0, "output": 0}}
        )
    assert run["status"] == "awaiting_merge", stderr
    assert [body["max_tokens"] for body in stand_in.requests] == [900, 64, 64]  # each role's bound
    assert ledger["calls"] == len(stand_in.requests) == 3
    deliver = ledger["by_category"]["deliver"]
    assert deliver["cost_usd"] == 0.0 and deliver["unknown_costs"] == 0  # priced 0 explicitly: known, not unknown
    assert "more bytes in mission record #1" in stand_in.requests[2]["messages"][0]["content"]
    # the review's record keeps the prompt it was given and the one it sent in the end, which the server received
    record = json.loads(stored(tmp_path / "repo", mission_path("r1", 2, "review")))
    assert record["sent_prompt"] == stand_in.requests[2]["messages"][0]["content"] != record["prompt"]
    assert "sent_prompt" not in json.loads(stored(tmp_path / "repo", mission_path("r1", 1, "draft")))


def test_a_review_still_too_long_after_the_cut_fails_the_run_naming_the_cause(tmp_path: Path) -> None:
    # issue 17, item 1; SPEC E1: a typed stop, the cause in one line; a local model unpriced is unknown, not $0
    stand_in = StandIn(n_ctx=1100, fill=True)
    with serving(stand_in) as url:
        run, stderr, ledger = run_on(tmp_path, url, context={"cut_bytes": 3500})
    assert (run["status"], run["reason"]["code"], run["reason"]["stage"]) == ("failed", "mission_failed", "review")
    cause = "the prompt exceeds the model's context, even with its context cut by the compaction tiers: "
    assert cause + "This model's maximum context length is 1100 tokens." in run["reason"]["message"]
    assert "\n" not in run["reason"]["message"]
    assert f"stopped: mission_failed at review: mission #2 at 'review' ended failed: {cause}" in stderr
    assert ledger["calls"] == len(stand_in.requests) == 3
    assert ledger["by_category"]["deliver"]["unknown_costs"] == 2  # no price given: unknown, never a silent $0


def test_a_slow_generation_stops_the_run_after_one_request_and_a_5xx_is_charged(tmp_path: Path) -> None:
    # issue 17, item 2; SPEC P2: the 503 is retried after a second, the slow answer is not waited for twice
    stand_in = StandIn(fail_first=1, delay_s=5.0)
    with serving(stand_in) as url:
        run, _stderr, ledger = run_on(tmp_path, url, timeout_s=1)
    assert (run["status"], run["reason"]["code"], run["reason"]["stage"]) == ("failed", "mission_failed", "draft")
    assert "mission #1 at 'draft' ended timeout" in run["reason"]["message"]
    assert "not retried: the server may still be generating it" in run["reason"]["message"]
    assert ledger["calls"] == len(stand_in.requests) == 2
