"""Interlock on a real small model, as issue 17 tried it: Gemma 3 270M in GGUF, served on CPU by llama-cpp-python's
OpenAI-compatible server, as the `openai:MODEL@http://127.0.0.1:PORT/v1` agent of a triage run and of a
draft -> review loop. Not run by CI: it needs the model file and minutes of CPU.

Run: ``python -m tests.bench.bench_small_model --model PATH.gguf`` (or ``INTERLOCK_BENCH_GGUF=PATH``): starts
``python -m llama_cpp.server`` on that file with a 2,048-token context; or ``--url http://HOST:PORT/v1`` (or
``INTERLOCK_BENCH_URL``) for a server already running. Without llama-cpp-python and without a URL it says how
to install both and exits 0. It never downloads a model.

Each run is ``interlock run`` as a real process on a fresh repository, its requests passing through a counting
proxy, and prints: the ledger's calls beside the requests the server received, the tokens, seconds per call,
and the run's final status with its typed reason.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.agents.llm_server import send_json
from tests.helpers import GRAPHS, ROOT, edge, graph, node
from tests.local.harness import make_repo

MODEL = "gemma-3-270m"
INSTALL = """llama-cpp-python is not installed and no --url was given: nothing to measure.
To run this benchmark:
  pip install 'llama-cpp-python[server]'       # builds llama.cpp for the CPU (a few minutes)
  # a Gemma 3 270M GGUF, e.g. from https://huggingface.co/ggml-org/gemma-3-270m-it-GGUF
  python -m tests.bench.bench_small_model --model gemma-3-270m-it-Q8_0.gguf
or point it at a server already running: --url http://127.0.0.1:8000/v1"""
DRAFT_REVIEW = graph(
    [
        node("draft", "writing", extraPrompt="Write a short product description of a paper notebook."),
        node("review", "review", extraPrompt="Review the draft above. Answer PASS if it is fine, FAIL if not."),
    ],
    [edge("draft", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "draft")],
    entry="draft",
)


class Counter:
    """The requests the server received, and the seconds each took."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.seconds: list[float] = []
        self.lock = threading.Lock()


def _proxy(counter: Counter) -> type[BaseHTTPRequestHandler]:
    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            started = time.monotonic()
            headers = {"content-type": "application/json"}
            try:
                answer = httpx.post(f"{counter.upstream}{self.path.removeprefix('/v1')}", content=body,
                                    headers=headers, timeout=600)  # fmt: skip
                status, data = answer.status_code, answer.content
            except httpx.HTTPError as exc:
                status, data = 502, json.dumps({"error": {"message": str(exc)}}).encode()
            with counter.lock:
                counter.seconds.append(time.monotonic() - started)
            send_json(self, status, data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Proxy


@contextmanager
def counting(upstream: str) -> Iterator[tuple[str, Counter]]:
    counter = Counter(upstream)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _proxy(counter))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", counter
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def llama_server(model: Path, n_ctx: int) -> Iterator[str]:
    """llama-cpp-python's server on ``model``, on a free loopback port, until the block ends."""
    port = 18000 + os.getpid() % 1000
    argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL,
            "--n_ctx", str(n_ctx), "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            raise SystemExit(f"llama-cpp-python's server did not answer on {url} within 300 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def interlock(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "app", *args, "--repo", str(repo)]
    return subprocess.run(command, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=3600)


def one_run(name: str, graph_file: Path, url: str, counter: Counter, config: dict[str, Any]) -> dict[str, Any]:
    """``interlock run`` of ``graph_file`` on a fresh repository with the model behind ``url``: its figures."""
    folder = Path(tempfile.mkdtemp(prefix=f"interlock-bench-{name}-"))
    make_repo(folder / "repo")
    (folder / "config.json").write_text(json.dumps(config))
    before = len(counter.seconds)
    started = time.monotonic()
    request = "The app crashes when I open a notebook with no pages. Please fix."
    result = interlock(folder / "repo", "run", str(graph_file), "--request", request, "--run-id", "r1",
                       "--config", str(folder / "config.json"), "--json")  # fmt: skip
    wall = time.monotonic() - started
    run = json.loads(result.stdout) if result.stdout.startswith("{") else {}
    ledger = json.loads(interlock(folder / "repo", "money", "r1", "--json").stdout or "{}")
    lines = ledger.get("by_category", {}).values()
    seconds = counter.seconds[before:]
    return {
        "run": name,
        "status": run.get("status", f"no run (exit {result.returncode})"),
        "reason": (run.get("reason") or {}).get("code", "-"),
        "ledger calls": ledger.get("calls", 0),
        "server requests": len(seconds),
        "tokens in/out": f"{sum(x['input_tokens'] for x in lines)}/{sum(x['output_tokens'] for x in lines)}",
        "s per call": f"{sum(seconds) / len(seconds):.2f}" if seconds else "-",
        "wall s": f"{wall:.1f}",
        "traceback": "Traceback" in result.stderr,
    }


def measure(url: str, max_tokens: int) -> list[dict[str, Any]]:
    with counting(url) as (proxied, counter):
        agent = f"openai:{MODEL}@{proxied}"
        roles = [{"name": "model", "fullAuthority": True, "maxTokens": max_tokens}]
        base = {"agent": agent, "decide": agent, "gates": "approve", "team": {"roles": roles},
                "prices": {MODEL: {"input": 0, "output": 0}}, "timeout_s": 600}  # fmt: skip
        loop = Path(tempfile.mkdtemp(prefix="interlock-bench-graph-")) / "draft-review.json"
        loop.write_text(json.dumps(DRAFT_REVIEW))
        return [
            one_run("triage", GRAPHS / "operations" / "triage.json", proxied, counter, base),
            one_run("draft -> review", loop, proxied, counter, base),
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.environ.get("INTERLOCK_BENCH_GGUF"), help="a GGUF file")
    parser.add_argument("--url", default=os.environ.get("INTERLOCK_BENCH_URL"), help="a server already running")
    parser.add_argument("--n-ctx", type=int, default=2048, help="the context llama-cpp-python gives the model")
    parser.add_argument("--max-tokens", type=int, default=256, help="the role's maxTokens")
    args = parser.parse_args(argv)
    if args.url:
        rows = measure(args.url, args.max_tokens)
    elif args.model and importlib.util.find_spec("llama_cpp") is not None:
        with llama_server(Path(args.model), args.n_ctx) as url:
            rows = measure(url, args.max_tokens)
    else:
        print(INSTALL if importlib.util.find_spec("llama_cpp") is None else "give --model PATH.gguf or --url URL")
        return 0
    for row in rows:
        print("  ".join(f"{key}: {value}" for key, value in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
