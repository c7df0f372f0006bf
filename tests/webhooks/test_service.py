"""The webhook service: signature first, lenient payloads, answered at once and applied from the queue,
idempotency (SPEC GH8)."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome, Router, default_router
from app.webhooks.service import WEBHOOK_PATH, create_app
from app.webhooks.settings import ServiceSettings
from tests.webhooks.conftest import EXAMPLES, corpus_examples, signed
from tests.webhooks.queue_helpers import post_settled, settle

PING = {"zen": "Keep it logically awesome.", "hook_id": 1, "sender": {"login": "octocat", "type": "User"}}


def client(settings: ServiceSettings, router: Router | None = None, **options: Any) -> TestClient:
    return TestClient(create_app(settings, router, **options))


def test_a_signed_ping_is_handled(settings: ServiceSettings) -> None:
    # SPEC GH8
    body, headers = signed("ping", PING)
    response = client(settings).post(WEBHOOK_PATH, content=body, headers=headers)
    assert response.status_code == 200 and response.json() == {"delivery": "d-1", "outcome": "handled"}


@pytest.mark.parametrize(
    "mangle",
    [
        lambda h, b: {k: v for k, v in h.items() if k != "x-hub-signature-256"},
        lambda h, b: {**h, "x-hub-signature-256": "sha256=" + "0" * 64},
        lambda h, b: {**h, "x-hub-signature-256": h["x-hub-signature-256"].replace("sha256=", "sha1=")},
        lambda h, b: {**h, "x-hub-signature-256": signed("ping", PING, secret=b"wrong")[1]["x-hub-signature-256"]},
    ],
    ids=["missing", "zeros", "other-scheme", "other-secret"],
)
def test_a_forged_or_unsigned_delivery_is_refused_before_parsing(settings: ServiceSettings, mangle: Any) -> None:
    # SPEC GH8: the signature is checked on the raw body before anything else
    calls: list[Delivery] = []
    router = Router()
    router.on("ping")(lambda d: calls.append(d) or Outcome.HANDLED)  # type: ignore[func-returns-value]
    body, headers = signed("ping", PING)
    response = client(settings, router).post(WEBHOOK_PATH, content=body, headers=mangle(headers, body))
    assert response.status_code == 401 and calls == []


@pytest.mark.parametrize(
    "header",
    [b"sha256=\xc3\xa9" + b"0" * 62, b"sha256=" + b"\xff" * 64, b"sha256=\x80", b"sha256=" + b"a" * 5000],
    ids=["utf8", "latin1", "short-high-byte", "long"],
)
def test_a_malformed_signature_header_is_401_not_500(settings: ServiceSettings, header: bytes) -> None:
    # SPEC GH9: any malformed X-Hub-Signature-256 is refused as unauthenticated, before anything else runs
    calls: list[Delivery] = []
    router = Router()
    router.on("ping")(lambda d: calls.append(d) or Outcome.HANDLED)  # type: ignore[func-returns-value]
    body, headers = signed("ping", PING)
    sent: dict[str, Any] = {**headers, "x-hub-signature-256": header}
    response = client(settings, router).post(WEBHOOK_PATH, content=body, headers=sent)
    assert response.status_code == 401 and calls == []
    assert response.json() == {"error": "missing or invalid X-Hub-Signature-256"}


def test_a_body_changed_after_signing_is_refused(settings: ServiceSettings) -> None:
    body, headers = signed("ping", PING)
    response = client(settings).post(WEBHOOK_PATH, content=body.replace(b"awesome", b"awful"), headers=headers)
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("body", "headers_drop", "fragment"),
    [
        (b"{truncated", (), "not JSON"),
        (b"[1, 2]", (), "not a JSON object"),
        (b'{"a": 1}', ("x-github-event",), "headers are required"),
        (b'{"a": 1}', ("x-github-delivery",), "headers are required"),
        (b"[" * 50_000, (), "not JSON"),
    ],
)
def test_a_malformed_delivery_is_400(
    settings: ServiceSettings, body: bytes, headers_drop: tuple[str, ...], fragment: str
) -> None:
    _, headers = signed("ping", body)
    headers = {k: v for k, v in headers.items() if k not in headers_drop}
    response = client(settings).post(WEBHOOK_PATH, content=body, headers=headers)
    assert response.status_code == 400 and fragment in response.json()["error"]


def test_an_oversized_delivery_is_413_without_running_anything(settings: ServiceSettings) -> None:
    body, headers = signed("ping", {**PING, "padding": "x" * 5000})
    response = client(settings, max_body=4096).post(WEBHOOK_PATH, content=body, headers=headers)
    assert response.status_code == 413


def test_events_nobody_handles_are_acknowledged(settings: ServiceSettings) -> None:
    body, headers = signed("star", {"action": "created", "sender": {"login": "a", "type": "User"}})
    response = client(settings).post(WEBHOOK_PATH, content=body, headers=headers)
    assert response.status_code == 202 and response.json()["outcome"] == "ignored"


def test_events_the_app_caused_are_ignored(settings: ServiceSettings) -> None:
    # SPEC GH8: the app's own comments and labels never drive a run
    router = default_router("interlock-app")
    router.on("issue_comment", "created")(lambda d: Outcome.HANDLED)
    own = {"action": "created", "sender": {"login": "interlock-app[bot]", "type": "Bot"}}
    body, headers = signed("issue_comment", own)
    response = client(settings, router).post(WEBHOOK_PATH, content=body, headers=headers)
    assert response.json()["outcome"] == "own"
    other = {"action": "created", "sender": {"login": "someone-else[bot]", "type": "Bot"}}
    body, headers = signed("issue_comment", other, delivery="d-2")
    assert post_settled(client(settings, router), body, headers).outcome == "handled"
    # SPEC GH3: a job the app dispatched ends with the app as the sender of its workflow_run: still handled
    router.on("workflow_run", "completed")(lambda d: Outcome.HANDLED)
    job = {"action": "completed", "sender": {"login": "interlock-app[bot]", "type": "Bot"}}
    body, headers = signed("workflow_run", job, delivery="d-3")
    assert post_settled(client(settings, router), body, headers).outcome == "handled"


def test_a_redelivery_is_not_handled_twice(settings: ServiceSettings) -> None:
    # SPEC GH8, J2: X-GitHub-Delivery is the idempotency key
    calls: list[str] = []
    router = Router()
    router.on("ping")(lambda d: calls.append(d.delivery_id) or Outcome.HANDLED)  # type: ignore[func-returns-value]
    service = client(settings, router)
    body, headers = signed("ping", PING, delivery="same")
    assert post_settled(service, body, headers).outcome == "handled"
    second = service.post(WEBHOOK_PATH, content=body, headers=headers)
    assert second.status_code == 202 and second.json() == {"delivery": "same", "outcome": "duplicate"}
    assert calls == ["same"]


def test_a_failing_handler_is_retried_then_applied(settings: ServiceSettings) -> None:
    # SPEC GH8: a handler's failure is retried by the queue, with back-off; a success ends it
    attempts: list[int] = []

    def flaky(delivery: Delivery) -> Outcome:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("GitHub answered 502")
        return Outcome.HANDLED

    router = Router()
    router.on("ping")(flaky)
    app = create_app(settings, router, retry_base_s=0.01)
    body, headers = signed("ping", PING, delivery="retry-me")
    record = post_settled(TestClient(app), body, headers)
    assert (record.state, record.outcome, record.attempts, len(attempts)) == ("applied", "handled", 3, 3)
    text = TestClient(app).get("/metrics").text
    assert 'interlock_queue_deliveries_total{kind="retried"} 2' in text
    assert 'interlock_queue_deliveries_total{kind="applied"} 1' in text


def test_a_handler_failing_every_attempt_is_failed_and_a_redelivery_queues_it_again(settings: ServiceSettings) -> None:
    # SPEC GH8: after INTERLOCK_DELIVERY_ATTEMPTS the delivery is FAILED, with the reason; redelivered, it runs again
    broken = threading.Event()
    broken.set()

    def handler(delivery: Delivery) -> Outcome:
        if broken.is_set():
            raise RuntimeError("GitHub answered 502")
        return Outcome.HANDLED

    router = Router()
    router.on("ping")(handler)
    app = create_app(replace(settings, delivery_attempts=2), router, retry_base_s=0.01)
    body, headers = signed("ping", PING, delivery="hopeless")
    record = post_settled(TestClient(app), body, headers)
    assert record.state == "failed" and record.attempts == 2
    assert record.outcome == "handler failed after 2 attempts: RuntimeError: GitHub answered 502"
    assert 'interlock_queue_deliveries_total{kind="failed"} 1' in TestClient(app).get("/metrics").text
    broken.clear()
    assert post_settled(TestClient(app), body, headers).outcome == "handled"


def test_a_slow_handler_does_not_hold_the_answer(settings: ServiceSettings) -> None:
    # SPEC GH8: the answer is within GitHub's 10 seconds whatever the handler takes: the work is queued
    release = threading.Event()
    router = Router()
    router.on("ping")(lambda d: release.wait(30) and Outcome.HANDLED)  # type: ignore[arg-type, return-value]
    app = create_app(settings, router)
    body, headers = signed("ping", PING)
    response = TestClient(app).post(WEBHOOK_PATH, content=body, headers=headers)
    assert response.status_code == 202 and response.json()["outcome"] == "queued"
    assert not release.is_set()  # answered while the handler still waits
    release.set()
    assert settle(app, "d-1").outcome == "handled"


def test_queued_deliveries_survive_a_restart(settings: ServiceSettings, tmp_path: Path) -> None:
    # SPEC GH8: a 202 is a promise: a delivery the first process took but never finished (it died) is applied by
    # the next process on the same data folder, once its lease lapsed
    stuck = threading.Event()
    first_router = Router()
    first_router.on("ping")(lambda d: stuck.wait(30) and Outcome.HANDLED)  # type: ignore[arg-type, return-value]
    durable = replace(settings, data_dir=tmp_path, visibility_s=1.0)
    first = create_app(replace(durable, workers=1), first_router)  # its one worker hangs, as if it died
    body, headers = signed("ping", PING, delivery="promised")
    assert TestClient(first).post(WEBHOOK_PATH, content=body, headers=headers).json()["outcome"] == "queued"
    applied: list[str] = []
    second_router = Router()
    second_router.on("ping")(lambda d: applied.append(d.delivery_id) or Outcome.HANDLED)  # type: ignore[func-returns-value]
    second = create_app(durable, second_router)  # no post to it: it resumes on its own
    record = settle(second, "promised")
    stuck.set()
    assert (record.state, record.outcome, record.attempts, applied) == ("applied", "handled", 2, ["promised"])


def test_every_corpus_payload_gets_an_answer_that_is_not_5xx(settings: ServiceSettings) -> None:
    # SPEC GH8: never fail a delivery because a field it does not use is missing (125 real examples)
    examples = corpus_examples()
    assert len(examples) == 125
    service = client(settings)
    statuses: dict[int, int] = {}
    for index, path in enumerate(examples):
        event = path.relative_to(EXAMPLES).parts[0]
        body, headers = signed(event, path.read_bytes(), delivery=f"corpus-{index}")
        status = service.post(WEBHOOK_PATH, content=body, headers=headers).status_code
        assert status < 500, f"{path.name}: {status}"
        statuses[status] = statuses.get(status, 0) + 1
    assert set(statuses) <= {200, 202}


def test_health_and_metrics(settings: ServiceSettings) -> None:
    service = client(settings)
    assert service.get("/healthz").json() == {"status": "ok", "queue": "sqlite", "waiting": 0, "limiter": "in-process"}
    body, headers = signed("ping", PING)
    service.post(WEBHOOK_PATH, content=body, headers=headers)  # the default router's ping is inline
    service.post(WEBHOOK_PATH, content=body, headers={**headers, "x-hub-signature-256": "sha256=00"})
    text = service.get("/metrics").text
    assert 'interlock_deliveries_total{event="ping",outcome="handled",status="200"} 1' in text
    assert (
        'interlock_deliveries_total{event="unverified",outcome="missing or invalid X-Hub-Signature-256",status="401"} 1'
        in text
    )
    assert "interlock_delivery_seconds_count 2" in text


def test_fields_are_read_leniently() -> None:
    # SPEC GH8: absent or mistyped fields read as None, never an exception
    delivery = Delivery("issues", "x", {"action": 5, "installation": {"id": "7"}, "sender": "nobody"})
    assert (delivery.action, delivery.installation_id, delivery.sender, delivery.repository) == (None, None, None, None)
    real = json.loads((EXAMPLES / "issues" / "assigned.with-installation.payload.json").read_text())
    parsed = Delivery("issues", "y", real)
    assert parsed.action == "assigned" and parsed.installation_id == real["installation"]["id"]
    assert parsed.repository == real["repository"]["full_name"] and parsed.sender == real["sender"]["login"]


def test_unsigned_requests_with_made_up_events_do_not_grow_metrics(settings: ServiceSettings) -> None:
    # SPEC GH9: no header of an unauthenticated request creates a series; event labels come from a closed set
    service = create_app(settings)
    body, headers = signed("ping", PING)

    async def flood() -> list[int]:  # one event loop for all requests: the service's own ASGI app, no thread hops
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=service), base_url="http://t") as http:
            statuses = []
            for index in range(2000):
                forged = {**headers, "x-github-event": f"evil-{index}", "x-hub-signature-256": f"sha256={index:064x}"}
                statuses.append((await http.post(WEBHOOK_PATH, content=body, headers=forged)).status_code)
            return statuses

    assert set(asyncio.run(flood())) == {401}
    for index in range(20):  # signed, but of events nobody handles: counted together as "other"
        other, signed_headers = signed(f"made-up-{index}", PING, delivery=f"o-{index}")
        assert TestClient(service).post(WEBHOOK_PATH, content=other, headers=signed_headers).status_code == 202
    text = TestClient(service).get("/metrics").text
    series = [line for line in text.splitlines() if line.startswith("interlock_deliveries_total{")]
    assert len(series) == 2 and len(text) < 2000 and "evil" not in text and "made-up" not in text
    assert 'interlock_deliveries_total{event="unverified",outcome="missing or invalid X-Hub-Signature-256",' in text
    assert 'interlock_deliveries_total{event="other",outcome="ignored",status="202"} 20' in text


def test_only_a_handler_that_takes_the_apps_own_events_receives_them(settings: ServiceSettings) -> None:
    # SPEC GH8, GH9: bot loop protection holds for every handler but one registered with `own=True` (the close of
    # an upstream request the App filed, which the App itself may close)
    router = default_router("interlock-app")
    router.on("issues", "closed", own=True)(lambda d: Outcome.HANDLED)
    router.on("issues", "labeled")(lambda d: Outcome.HANDLED)
    own = {"sender": {"login": "interlock-app[bot]", "type": "Bot"}}
    body, headers = signed("issues", {**own, "action": "closed"})
    assert post_settled(client(settings, router), body, headers).outcome == "handled"
    body, headers = signed("issues", {**own, "action": "labeled"}, delivery="d-2")
    assert client(settings, router).post(WEBHOOK_PATH, content=body, headers=headers).json()["outcome"] == "own"
    body, headers = signed("issues", {**own, "action": "opened"}, delivery="d-3")
    assert client(settings, router).post(WEBHOOK_PATH, content=body, headers=headers).json()["outcome"] == "own"
