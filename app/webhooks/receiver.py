"""The answer to one POST of a webhook delivery (SPEC GH8), apart from the service that wires it
(``app/webhooks/service.py``): what happens before a delivery is stored or handled is the service's defence, and
reads best in the order it runs.

Order of work on a delivery, and why:
1. a size limit (25 MB, GitHub's own cap) before reading — a flood of bytes costs nothing;
2. the HMAC-SHA256 signature of the raw body, in constant time, before any parsing — 401 otherwise;
3. the JSON body and the event headers — 400 when malformed;
4. a delivery no handler needs a thread for (ignored, the App's own, an inline handler) is answered at once,
   with its outcome, as before;
5. any other is ``put`` in the durable delivery queue (``app/webhooks/deliveries/durable.py``; SQLite in the
   data folder by default) and answered 202 ``queued`` — or 202 ``duplicate`` when the queue knew its id —
   well within GitHub's 10 s, whatever the handler will take; the workers (``app/webhooks/deliveries/workers.py``)
   apply it, one at a time per repository, retrying what failed and recording FAILED what was refused
   (``MalformedDelivery``, an invalid configuration, a broken state file: the details once answered 400/422).
   A queue that cannot be reached (Redis down) answers **503**: the delivery was not stored, GitHub records it
   failed, and the sweep or ``interlock redeliver`` sends it again. 503 rather than a fallback for that one
   delivery: a put into this replica's own file while the others keep to Redis would apply it beside the
   repository's order, and a 503 loses nothing, as GitHub keeps every delivery it sent.

https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from app.webhooks.deliveries.durable import DeliveryQueue, QueuedDelivery, QueueUnavailable
from app.webhooks.deliveries.workers import Workers, refusal
from app.webhooks.delivery import Delivery, MalformedDelivery
from app.webhooks.metrics import UNVERIFIED, Metrics
from app.webhooks.router import Outcome, Router
from app.webhooks.signature import signature_valid

RECENT_DELIVERIES = 10_000
QUEUE_DOWN = "the delivery queue is unreachable; the delivery was not stored: redeliver it"

log = logging.getLogger("interlock.webhooks")


class RecentDeliveries:
    """Delivery ids this replica completed, bounded: a quick answer to an immediate redelivery. The run
    journal, keyed by the same ids, is what makes a redelivery change nothing across replicas."""

    def __init__(self, capacity: int = RECENT_DELIVERIES) -> None:
        self.capacity = capacity
        self.ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, delivery_id: str) -> bool:
        return delivery_id in self.ids

    def add(self, delivery_id: str) -> None:
        self.ids[delivery_id] = None
        self.ids.move_to_end(delivery_id)
        while len(self.ids) > self.capacity:
            self.ids.popitem(last=False)


class TooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class Receiver:
    """The webhook endpoint of one service: ``receive`` answers each POST, in the order the module says."""

    def __init__(
        self,
        secret: bytes,
        routes: Router,
        deliveries: DeliveryQueue,
        workers: Workers,
        metrics: Metrics,
        max_body: int,
    ) -> None:
        self.secret, self.routes, self.deliveries = secret, routes, deliveries
        self.workers, self.metrics, self.max_body = workers, metrics, max_body
        self.recent = RecentDeliveries()

    def answer(self, status: int, body: dict[str, Any], label: str, started: float) -> Response:
        """The response, counted under ``label``: ``UNVERIFIED`` before the signature held, else the event's."""
        self.metrics.observe(
            label, str(body.get("outcome", body.get("error", status))), status, time.perf_counter() - started
        )
        return JSONResponse(body, status_code=status)

    def enqueue(self, delivery: Delivery, body: bytes) -> bool:
        key = delivery.repository or delivery.delivery_id
        fresh = self.deliveries.put(QueuedDelivery(delivery.delivery_id, delivery.event, key, body))
        if fresh:
            self.metrics.count_queue("queued")
        self.workers.notify()
        return fresh

    async def receive(self, request: Request) -> Response:
        started, answer = time.perf_counter(), self.answer
        event = request.headers.get("x-github-event", "")
        try:
            body = await read_body(request, self.max_body)
        except TooLarge:
            return answer(413, {"error": f"payload larger than {self.max_body:,} bytes"}, UNVERIFIED, started)
        if not signature_valid(self.secret, body, request.headers.get("x-hub-signature-256")):
            return answer(401, {"error": "missing or invalid X-Hub-Signature-256"}, UNVERIFIED, started)
        delivery_id = request.headers.get("x-github-delivery", "")
        label = self.metrics.event_label(event)
        if not event or not delivery_id:
            return answer(400, {"error": "X-GitHub-Event and X-GitHub-Delivery headers are required"}, label, started)
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return answer(400, {"error": "the body is not JSON"}, label, started)
        if not isinstance(payload, dict):
            return answer(400, {"error": "the body is not a JSON object"}, label, started)
        delivery = Delivery(event, delivery_id, payload)
        if self.routes.needs_worker(delivery):
            try:
                fresh = await run_in_threadpool(self.enqueue, delivery, body)
            except QueueUnavailable as error:  # not stored: GitHub records a failed delivery, redelivered later
                log.error("could not queue %s, answered 503: %s", delivery.describe(), error)
                return answer(503, {"delivery": delivery_id, "error": QUEUE_DOWN}, label, started)
            outcome = "queued" if fresh else Outcome.DUPLICATE
            return answer(202, {"delivery": delivery_id, "outcome": outcome}, label, started)
        if delivery_id in self.recent:
            return answer(200, {"delivery": delivery_id, "outcome": Outcome.DUPLICATE}, label, started)
        return self.inline(delivery, label, started)

    def inline(self, delivery: Delivery, label: str, started: float) -> Response:
        """Ignored, own, or an inline handler: no I/O, answered at once with its outcome."""
        answer = self.answer
        try:
            outcome = self.routes.dispatch(delivery)
        except MalformedDelivery as exc:
            refusal(delivery, exc)
            error = {"delivery": delivery.delivery_id, "error": "malformed delivery", "detail": str(exc)}
            return answer(400, error, label, started)
        except Exception:
            log.exception("failed on %s", delivery.describe())
            return answer(500, {"delivery": delivery.delivery_id, "error": "handler failed; redeliver"}, label, started)
        self.recent.add(delivery.delivery_id)
        status = 202 if outcome in (Outcome.IGNORED, Outcome.OWN) else 200
        return answer(status, {"delivery": delivery.delivery_id, "outcome": outcome}, label, started)
