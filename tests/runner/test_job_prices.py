"""The repository's `prices:` reach the job (SPEC P3): the service writes them into every order, and a job's
HTTP agent estimates its cost with them; a model priced nowhere costs "unknown", never $0."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.agents.prices import ModelPrice
from app.runner.orders import read_order
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, encode_json
from tests.local.test_costs import Completions
from tests.runner.test_job import BRANCH, RUN, seed_origin, state_file

HOUSE = {"house-model": ModelPrice(input=2.0, output=10.0)}  # USD per million tokens


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Completions)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def priced_origin(tmp_path: Path, prices: dict[str, ModelPrice]) -> Path:
    """The origin of tests/runner/test_job.py, its first order written with ``prices``, as the service writes
    it when `.github/interlock.yml` has them."""
    origin = seed_origin(tmp_path)
    path = f"runs/{RUN}/orders/0001-build.json"
    order = state_file(origin, path)
    written = mission_order_fields(order, prices)
    Remote(tmp_path / "seed").add_files(STATE_BRANCH, {path: encode_json(written)}, "interlock: prices")
    return origin


def mission_order_fields(order: dict[str, Any], prices: dict[str, ModelPrice]) -> dict[str, Any]:
    return {**order, **({"prices": {m: p.model_dump() for m, p in prices.items()}} if prices else {})}


def job_cost(tmp_path: Path, origin: Path, agent: str) -> dict[str, Any]:
    checkout = tmp_path / "job"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "1"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [*argv, "--agent", agent, "--workdir", str(checkout)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    record = state_file(origin, f"runs/{RUN}/missions/0001-build.json")
    return record["usage"]


def test_a_jobs_http_agent_prices_its_tokens_with_the_repositorys_prices(tmp_path: Path, server: str) -> None:
    # SPEC P3: 1,000 prompt and 100 completion tokens at $2 / $10 per million: $0.003, marked as an estimate
    usage = job_cost(tmp_path, priced_origin(tmp_path, HOUSE), f"openai:house-model@{server}")
    assert usage["cost_usd"] == pytest.approx(0.003) and usage["estimated"] is True


def test_without_the_repositorys_price_the_cost_is_unknown_never_zero(tmp_path: Path, server: str) -> None:
    usage = job_cost(tmp_path, priced_origin(tmp_path, {}), f"openai:house-model@{server}")
    assert usage["cost_usd"] is None


def test_an_order_with_prices_that_make_no_sense_is_refused_by_name() -> None:
    order = {"seq": 1, "stage": "build", "kind": "deliver", "capability": "coding", "prompt": "p"}
    read = read_order({**order, "prices": {"m": {"input": 1, "output": 2}}})
    assert read.prices == {"m": ModelPrice(input=1, output=2)}
    with pytest.raises(ValueError, match="'prices'"):
        read_order({**order, "prices": {"m": {"input": -1, "output": 2}}})
