"""Optional OpenTelemetry traces of runs (SPEC W6): one trace per run, a span per transition and per mission.

Why the trace id is derived from the run: a run's transitions are applied by different deliveries, processes,
replicas and machines (a label on GitHub, a job's end an hour later, ``interlock resume`` on a laptop), which
share no context to pass a parent span along. A trace id that is a function of the repository and the run id
puts all of them in one trace without passing anything; the spans hang under a parent span id derived the same
way, which is never exported itself.

Why it costs nothing when off: the SDK is an optional extra (``pip install 'interlock[otel]'``). Whether to
trace is decided once per process, at the first transition, from the standard variables: with the SDK or the
OTLP exporter missing, ``OTEL_SDK_DISABLED=true``, ``OTEL_TRACES_EXPORTER`` not naming ``otlp``, or no
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, no tracer is made and each later
transition costs one check. The exporter reads its other ``OTEL_EXPORTER_OTLP_*`` variables itself (headers,
timeout, compression), and the resource reads ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``.
https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from typing import Any

from app.runner.saved import Saved

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_SERVICE_NAME = "interlock"
log = logging.getLogger("interlock.traces")
_lock = threading.Lock()
_tracer: list[Any] = []  # empty: not decided yet; else [tracer or None], decided once per process


def run_ids(repository: str, run_id: str) -> tuple[int, int]:
    """The trace id and parent span id of a run's spans: the same wherever and whenever they are made."""
    digest = hashlib.sha256(f"interlock run\0{repository}\0{run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def use(provider: Any | None) -> None:
    """Trace through ``provider`` (an SDK ``TracerProvider``) from now on; ``None``: decide again from the
    environment at the next transition. For tests, which read the spans from an in-memory exporter."""
    with _lock:
        _tracer.clear()
        if provider is not None:
            _tracer.append(provider.get_tracer("interlock"))


def tracer() -> Any | None:
    """The process's tracer, or ``None`` when traces are off (decided at the first call)."""
    if not _tracer:
        with _lock:
            if not _tracer:
                _tracer.append(_from_environment())
    return _tracer[0]


def _from_environment() -> Any | None:
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporters = [name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    if "otlp" not in exporters or not any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning("an OTLP endpoint is set but the otel extra is not installed: pip install 'interlock[otel]'")
        return None
    named = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": DEFAULT_SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(named))  # flushed and shut down at exit by the SDK
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("interlock")


def record(saved: Saved) -> None:
    """The spans of one saved transition, when traces are on: the transition's, and the mission's whose
    outcome it applied (ending when it was applied, starting its reported duration earlier)."""
    found = tracer()
    if found is None:
        return
    from opentelemetry import trace

    trace_id, parent_id = run_ids(saved.repository, saved.after.id)
    parent = trace.SpanContext(
        trace_id, parent_id, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)
    )
    context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
    start, end = _nanoseconds(saved.started), _nanoseconds(saved.ended)
    found.start_span(f"transition {saved.kind}", context, start_time=start, attributes=_transition(saved)).end(end)
    mission = saved.mission()
    if mission is not None:
        took = mission.duration_s or mission.usage.seconds or 0.0
        began = start - _nanoseconds(max(took, 0.0))
        span = found.start_span(f"mission {mission.stage}", context, start_time=began, attributes=_mission(saved))
        span.end(start)


def _common(saved: Saved) -> dict[str, Any]:
    run = saved.after
    return {"interlock.run.id": run.id, "interlock.repository": saved.repository, "interlock.team": run.team}


def _transition(saved: Saved) -> dict[str, Any]:
    before = saved.before
    attributes = {
        **_common(saved),
        "interlock.event": saved.kind,
        "interlock.stage": saved.after.stage,
        "interlock.stage.before": before.stage if before is not None else None,
        "interlock.status": saved.after.status.value,
        "interlock.verdict": saved.verdict(),
        "interlock.graph": saved.after.graph,
    }
    return {key: value for key, value in attributes.items() if value is not None}


def _mission(saved: Saved) -> dict[str, Any]:
    mission = saved.mission()
    usage = saved.usage()
    category = saved.category()
    assert mission is not None and usage is not None and category is not None
    attributes = {
        **_common(saved),
        "interlock.mission.seq": mission.seq,
        "interlock.mission.kind": mission.kind.value,
        "interlock.stage": mission.stage,
        "interlock.visit": mission.visit,
        "interlock.status": mission.status.value if mission.status is not None else None,
        "interlock.verdict": mission.verdict,
        "interlock.agent": mission.agent,
        "interlock.model": mission.model,
        "interlock.category": category.value,
        "interlock.calls": usage.calls,
        "interlock.tokens.input": usage.input_tokens,
        "interlock.tokens.output": usage.output_tokens,
        "interlock.cost_usd": usage.cost_usd,
        "interlock.cost_estimated": usage.estimated,
    }
    return {key: value for key, value in attributes.items() if value is not None}


def _nanoseconds(seconds: float) -> int:
    return int(seconds * 1_000_000_000)
