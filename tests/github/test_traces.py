"""OpenTelemetry traces of runs driven through the service against the stand-in GitHub (SPEC W6): one trace per
run whatever delivers its events, a span per transition and per mission with their attributes; and nothing at
all, without failing, when the SDK is missing or no endpoint is configured."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.engine.record import Status
from app.runner import traces
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO
from tests.github.test_metrics import ServedWorld
from tests.helpers import doc


@pytest.fixture(autouse=True)
def decide_again() -> Iterator[None]:
    yield
    traces.use(None)  # the next test's first transition decides from its own environment


@pytest.fixture
def exported() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traces.use(provider)
    return exporter


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[dict[str, Any]]:
    return [dict(span.attributes or {}) for span in spans if span.name == name]


def test_a_run_is_one_trace_with_a_span_per_transition_and_mission(
    settings: ServiceSettings, exported: InMemorySpanExporter
) -> None:
    # SPEC W6: one trace per run, its id derived from the repository and run id; spans carry the attributes
    served = ServedWorld(settings)
    _, issue = served.label()
    served.mission(issue, 1, "build", "built it", tokens=100, cost=0.25)
    served.review(issue, "approved", body="Ship it")
    served.service = TestClient(create_app(settings, served.router))  # another service, as another replica would
    served.mission(issue, 2, "review", "fine\nVERDICT: PASS", tokens=40, cost=0.5)
    run = served.run(issue)
    assert run.status is Status.AWAITING_MERGE
    spans = exported.get_finished_spans()
    trace_id, parent_id = traces.run_ids(REPO, run.id)
    assert {span.context.trace_id for span in spans} == {trace_id}
    assert {span.parent.span_id for span in spans if span.parent} == {parent_id} and all(s.parent for s in spans)
    names = [span.name for span in spans]
    assert names.count("transition Start") == 1 and names.count("transition MissionFinished") == 2
    assert names.count("transition GateApproved") == 1 and names.count("transition Linked") == 1
    start = by_name(spans, "transition Start")[0]
    assert start == {
        "interlock.run.id": run.id,
        "interlock.repository": REPO,
        "interlock.team": "core",
        "interlock.event": "Start",
        "interlock.stage": "build",
        "interlock.status": "running",
        "interlock.graph": "small",
    }
    routed = by_name(spans, "transition MissionFinished")[1]
    assert (routed["interlock.stage.before"], routed["interlock.verdict"], routed["interlock.status"]) == (
        "review",
        "PASS",
        "awaiting_merge",
    )
    build, review = by_name(spans, "mission build"), by_name(spans, "mission review")
    assert len(build) == 1 and len(review) == 1
    assert review[0] == {
        "interlock.run.id": run.id,
        "interlock.repository": REPO,
        "interlock.team": "core",
        "interlock.mission.seq": 2,
        "interlock.mission.kind": "deliver",
        "interlock.stage": "review",
        "interlock.visit": 1,
        "interlock.status": "done",
        "interlock.verdict": "PASS",
        "interlock.agent": "claude",
        "interlock.model": "claude-haiku-4-5",
        "interlock.category": "deliver",
        "interlock.calls": 2,
        "interlock.tokens.input": 40,
        "interlock.tokens.output": 5,
        "interlock.cost_usd": 0.5,
        "interlock.cost_estimated": False,
    }
    mission = next(span for span in spans if span.name == "mission review")
    applied = [span for span in spans if span.name == "transition MissionFinished"][1]
    assert mission.end_time == applied.start_time and mission.end_time - mission.start_time == 3_000_000_000
    keys = {key for span in spans for key in (span.attributes or {})}
    assert keys == set(re.findall(r"`(interlock\.[a-z_.]+)`", doc("operating/traces.md")))  # what the page lists
    other_run = traces.run_ids("octo/other", run.id)[0]
    assert other_run != trace_id  # the same run id in another repository is another trace


def test_without_an_endpoint_nothing_is_traced_and_nothing_fails(
    settings: ServiceSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC W6: traces are off unless an OTLP endpoint is set
    for name in traces.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    traces.use(None)
    served = ServedWorld(settings)
    _, issue = served.label()
    assert served.run(issue).status is Status.RUNNING and traces.tracer() is None


@pytest.mark.parametrize(("variable", "value"), [("OTEL_TRACES_EXPORTER", "none"), ("OTEL_SDK_DISABLED", "true")])
def test_the_standard_switches_turn_traces_off(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    # SPEC W6: OTEL_TRACES_EXPORTER and OTEL_SDK_DISABLED as the SDK defines them
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    monkeypatch.setenv(variable, value)
    traces.use(None)
    assert traces.tracer() is None
    monkeypatch.delenv(variable)
    traces.use(None)
    made = traces.tracer()  # the endpoint alone turns them on
    assert made is not None and made.resource.attributes["service.name"] == "interlock"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "interlock-eu")
    traces.use(None)
    assert traces.tracer().resource.attributes["service.name"] == "interlock-eu"


def test_without_the_sdk_an_endpoint_is_ignored_with_a_warning(
    settings: ServiceSettings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC W6: the otel extra is optional; an endpoint set without it traces nothing and fails nothing
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    for module in ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"):
        monkeypatch.setitem(sys.modules, module, None)  # an import of it fails, as when it is not installed
    traces.use(None)
    served = ServedWorld(settings)
    with caplog.at_level(logging.WARNING, logger="interlock.traces"):
        _, issue = served.label()
    assert served.run(issue).status is Status.RUNNING and traces.tracer() is None
    assert "pip install 'interlock[otel]'" in caplog.text
