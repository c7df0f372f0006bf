"""The small-model benchmark (issue 17) runs against any OpenAI-compatible server and says how to install what it
needs when nothing is there; CI never runs it on a real model (tests/bench/bench_small_model.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.agents.llm_server import StandIn, serving
from tests.bench import bench_small_model
from tests.helpers import ROOT


def test_without_llama_cpp_or_a_url_it_says_how_to_install_and_exits_0() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_BENCH_")}
    result = subprocess.run(
        [sys.executable, "-m", "tests.bench.bench_small_model"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'llama-cpp-python[server]'" in result.stdout and "--url" in result.stdout


def test_it_prints_calls_tokens_seconds_and_statuses_of_both_runs(capsys: pytest.CaptureFixture[str]) -> None:
    # SPEC P2: the ledger's calls beside the requests the server received, equal
    stand_in = StandIn(n_ctx=2048, fill=True)
    with serving(stand_in) as url:
        assert bench_small_model.main(["--url", url, "--max-tokens", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["run: triage", "run: draft -> review"]
    for line in lines:
        calls = re.search(r"ledger calls: (\d+)  server requests: (\d+)", line)
        assert calls is not None and calls.group(1) == calls.group(2), line
        assert "tokens in/out: " in line and "s per call: " in line and "traceback: False" in line
    assert "status: awaiting_merge" in lines[1]
    assert sum(int(re.findall(r"server requests: (\d+)", line)[0]) for line in lines) == len(stand_in.requests)
