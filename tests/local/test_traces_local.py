"""Traces of a local run (SPEC W6): `interlock run` in its own process, configured only by the standard
OTEL_* variables, sends its spans over OTLP/HTTP to a collector on loopback, in the same trace as any later
command on the run would; without an endpoint it sends nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from app.runner import traces
from tests.helpers import ROOT
from tests.local.harness import AGENT, make_repo

GRAPH = {
    "name": "loop",
    "entry": "work",
    "nodes": [{"stage": "work", "capability": "coding"}, {"stage": "review", "capability": "review"}],
    "edges": [
        {"from": "work", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
    ],
}


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps each decoded export request."""

    received: ClassVar[list[tuple[str, ExportTraceServiceRequest]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.received.append((f"{self.path} {self.headers.get('x-team', '')}", request))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, ExportTraceServiceRequest]]]]:
    received: ClassVar[list[tuple[str, ExportTraceServiceRequest]]] = []
    handler = type("Handler", (Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()


def run_locally(tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    repo = tmp / "repo"
    make_repo(repo)
    (tmp / "graph.json").write_text(json.dumps(GRAPH))
    (tmp / "script.json").write_text(json.dumps({"*": {"answer": "ok\nVERDICT: PASS"}}))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env = {**clean, "SCRIPT": str(tmp / "script.json"), "LOG": str(tmp / "log"), "PYTHONPATH": str(ROOT), **env}
    args = ["run", str(tmp / "graph.json"), "--request", "Work", "--agent", AGENT, "--repo", str(repo)]
    done = subprocess.run(
        [sys.executable, "-m", "app", *args, "--run-id", "traced", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def attributes(span: Any) -> dict[str, Any]:
    values = {}
    for item in span.attributes:
        kind = item.value.WhichOneof("value")
        values[item.key] = getattr(item.value, kind)
    return values


def test_a_local_run_sends_its_spans_to_the_configured_endpoint(tmp_path: Path, collector: Any) -> None:
    # SPEC W6: the standard variables configure it; one trace for the run, a span per transition and mission
    endpoint, received = collector
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "interlock-here"}
    shown = run_locally(tmp_path, {**otel, "OTEL_EXPORTER_OTLP_HEADERS": "x-team=core"})
    assert shown["status"] == "awaiting_merge"
    assert received and {path for path, _ in received} == {"/v1/traces core"}  # the exporter's own variables
    spans, services = [], set()
    for _, request in received:
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            spans += [span for scope in resource_spans.scope_spans for span in scope.spans]
    assert services == {"interlock-here"}
    trace_id, parent_id = traces.run_ids("local", "traced")
    assert {int.from_bytes(span.trace_id, "big") for span in spans} == {trace_id}
    assert {int.from_bytes(span.parent_span_id, "big") for span in spans} == {parent_id}
    names = sorted(span.name for span in spans)
    assert names.count("transition Start") == 1 and names.count("transition MissionFinished") == 2
    assert names.count("mission work") == 1 and names.count("mission review") == 1
    review = next(attributes(span) for span in spans if span.name == "mission review")
    assert review["interlock.run.id"] == "traced" and review["interlock.repository"] == "local"
    assert review["interlock.verdict"] == "PASS" and review["interlock.status"] == "done"
    assert review["interlock.tokens.output"] == 10 and review["interlock.cost_usd"] == pytest.approx(0.001)
    assert review["interlock.calls"] == 1 and review["interlock.agent"]


def test_without_an_endpoint_a_local_run_sends_nothing(tmp_path: Path, collector: Any) -> None:
    # SPEC W6: the SDK installed, no endpoint set: no exporter is made, nothing is sent
    endpoint, received = collector
    shown = run_locally(tmp_path, {"OTEL_SERVICE_NAME": "interlock-here", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"})
    assert shown["status"] == "awaiting_merge" and received == [] and endpoint
