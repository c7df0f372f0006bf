"""The FastAPI service that receives GitHub's webhook deliveries (SPEC GH8).

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

Which queue (``default_queue``): with ``INTERLOCK_REDIS_URL`` set, Redis, shared by every replica. If Redis does
not answer when the service starts, it does not refuse to start (a delivery is never failed over Redis): it
logs so and queues in its own SQLite file in the data folder, and ``/healthz`` says ``"queue": "sqlite"``, until
it is restarted with Redis reachable. Deliveries it acknowledged meanwhile are applied from that file.

Beside them, the sweep (``app/webhooks/deliveries/sweep.py``) asks GitHub every few minutes to redeliver what failed.

https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from app.github.client import GitHubApp
from app.webhooks.deliveries.durable import DeliveryQueue, QueuedDelivery, QueueState, QueueUnavailable
from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue
from app.webhooks.deliveries.sweep import Sweeper, service_sweeper
from app.webhooks.deliveries.workers import RETRY_BASE_S, Workers, refusal
from app.webhooks.delivery import Delivery, MalformedDelivery
from app.webhooks.metrics import UNVERIFIED, Metrics
from app.webhooks.router import Outcome, Router
from app.webhooks.settings import ServiceSettings
from app.webhooks.signature import signature_valid

MAX_BODY = 25 * 1024 * 1024
DEADLINE_S = 8.0  # a bound for waits inside a handler (app/github/throttle.py); no longer on the answer
QUEUE_FILE = "queue.sqlite3"
RECENT_DELIVERIES = 10_000
WEBHOOK_PATH = "/api/github/webhooks"
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


def github_router(settings: ServiceSettings) -> Router:
    """The handlers that drive runs on GitHub, with the app's own client and the bundled graph library."""
    from app.github.client import GitHubApp
    from app.graphset import library_dirs
    from app.webhooks.handlers import service_router

    app = GitHubApp(settings.app_identity(), redis_url=settings.redis_url, replicas=settings.replicas)
    return service_router(app, library_dirs(), settings.app_slug)


def default_queue(settings: ServiceSettings) -> DeliveryQueue:
    """Redis when ``redis_url`` is set and Redis answers; else the SQLite queue in the data folder (see the
    module's docstring for why an unreachable Redis does not stop the service)."""
    if settings.redis_url is not None and (shared := shared_queue(settings.redis_url)) is not None:
        return shared
    return embedded_queue(settings)


def shared_queue(url: str) -> RedisDeliveryQueue | None:
    """The Redis queue, its dead leases of this host lapsed; None, logged, when Redis does not answer."""
    queue = RedisDeliveryQueue.from_url(url)
    try:
        queue.ping()
        lapsed = queue.lapse_dead_leases()
    except QueueUnavailable as error:
        log.warning(
            "%s at start: deliveries are queued in this replica's own SQLite file in the data folder"
            " (/healthz says queue: sqlite) until it is restarted with Redis reachable",
            error,
        )
        return None
    if lapsed:
        log.warning("%d deliveries leased by a process of this host that is gone are taken again now", lapsed)
    return queue


def embedded_queue(settings: ServiceSettings) -> SqliteDeliveryQueue:
    """The SQLite queue in the data folder; with none set (settings built directly, in tests) a fresh temporary
    folder, which is not durable, as the log says."""
    folder = settings.data_dir
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="interlock-data-"))
        log.warning("no data folder set: the delivery queue is in %s, which is not durable", folder)
    queue = SqliteDeliveryQueue(folder / QUEUE_FILE)
    if lapsed := queue.lapse_dead_leases():
        log.warning("%d deliveries leased by a process that is gone are taken again now", lapsed)
    return queue


def waiting(queue: DeliveryQueue) -> int | None:
    """How many deliveries wait; None while the queue cannot be reached."""
    try:
        return queue.counts()[QueueState.WAITING]
    except QueueUnavailable:
        return None


def sweeper_for(
    settings: ServiceSettings, github: GitHubApp | None, queue: DeliveryQueue, metrics: Metrics
) -> Sweeper | None:
    """The sweep, with the App's own client unless one is given (tests give a stand-in's); None when it is off."""
    if settings.sweep is None:
        return None
    app = github or GitHubApp(settings.app_identity())
    return service_sweeper(settings.sweep, app, queue, settings.redis_url, lambda: metrics.count_queue("swept"))


def create_app(
    settings: ServiceSettings,
    router: Router | None = None,
    *,
    max_body: int = MAX_BODY,
    queue: DeliveryQueue | None = None,
    retry_base_s: float = RETRY_BASE_S,
    github: GitHubApp | None = None,
) -> FastAPI:
    routes = router or github_router(settings)
    deliveries = queue if queue is not None else default_queue(settings)
    metrics = Metrics(frozenset(event for event, _ in routes.handlers))
    metrics.waiting = lambda: waiting(deliveries)
    workers = Workers(
        deliveries,
        routes,
        count=settings.workers,
        attempts=settings.delivery_attempts,
        visibility_s=settings.visibility_s,
        on_end=metrics.count_queue,
        retry_base_s=retry_base_s,
    )
    sweeper = sweeper_for(settings, github, deliveries, metrics)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        workers.start()  # deliveries a previous process left waiting or leased are applied now
        if sweeper is not None:
            sweeper.start()
        yield
        if sweeper is not None:
            await run_in_threadpool(sweeper.stop)
        await run_in_threadpool(workers.stop)

    app = FastAPI(title="Interlock", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    recent = RecentDeliveries()
    app.state.metrics = metrics
    app.state.router = routes
    app.state.queue = deliveries
    app.state.workers = workers
    app.state.sweeper = sweeper
    counts = deliveries.counts()
    if counts[QueueState.WAITING] or counts[QueueState.LEASED]:
        workers.start()  # without a lifespan (a TestClient used without ``with``) the restart still resumes

    def answer(status: int, body: dict[str, Any], label: str, started: float) -> Response:
        """The response, counted under ``label``: ``UNVERIFIED`` before the signature held, else the event's."""
        metrics.observe(
            label, str(body.get("outcome", body.get("error", status))), status, time.perf_counter() - started
        )
        return JSONResponse(body, status_code=status)

    def enqueue(delivery: Delivery, body: bytes) -> bool:
        key = delivery.repository or delivery.delivery_id
        fresh = deliveries.put(QueuedDelivery(delivery.delivery_id, delivery.event, key, body))
        if fresh:
            metrics.count_queue("queued")
        workers.notify()
        return fresh

    @app.post(WEBHOOK_PATH)
    async def receive(request: Request) -> Response:
        started = time.perf_counter()
        event = request.headers.get("x-github-event", "")
        try:
            body = await read_body(request, max_body)
        except TooLarge:
            return answer(413, {"error": f"payload larger than {max_body:,} bytes"}, UNVERIFIED, started)
        if not signature_valid(settings.webhook_secret, body, request.headers.get("x-hub-signature-256")):
            return answer(401, {"error": "missing or invalid X-Hub-Signature-256"}, UNVERIFIED, started)
        delivery_id = request.headers.get("x-github-delivery", "")
        label = metrics.event_label(event)
        if not event or not delivery_id:
            return answer(400, {"error": "X-GitHub-Event and X-GitHub-Delivery headers are required"}, label, started)
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return answer(400, {"error": "the body is not JSON"}, label, started)
        if not isinstance(payload, dict):
            return answer(400, {"error": "the body is not a JSON object"}, label, started)
        delivery = Delivery(event, delivery_id, payload)
        if routes.needs_worker(delivery):
            try:
                fresh = await run_in_threadpool(enqueue, delivery, body)
            except QueueUnavailable as error:  # not stored: GitHub records a failed delivery, redelivered later
                log.error("could not queue %s, answered 503: %s", delivery.describe(), error)
                return answer(503, {"delivery": delivery_id, "error": QUEUE_DOWN}, label, started)
            outcome = "queued" if fresh else Outcome.DUPLICATE
            return answer(202, {"delivery": delivery_id, "outcome": outcome}, label, started)
        if delivery_id in recent:
            return answer(200, {"delivery": delivery_id, "outcome": Outcome.DUPLICATE}, label, started)
        return inline(delivery, label, started)

    def inline(delivery: Delivery, label: str, started: float) -> Response:
        """Ignored, own, or an inline handler: no I/O, answered at once with its outcome."""
        try:
            outcome = routes.dispatch(delivery)
        except MalformedDelivery as exc:
            refusal(delivery, exc)
            error = {"delivery": delivery.delivery_id, "error": "malformed delivery", "detail": str(exc)}
            return answer(400, error, label, started)
        except Exception:
            log.exception("failed on %s", delivery.describe())
            return answer(500, {"delivery": delivery.delivery_id, "error": "handler failed; redeliver"}, label, started)
        recent.add(delivery.delivery_id)
        status = 202 if outcome in (Outcome.IGNORED, Outcome.OWN) else 200
        return answer(status, {"delivery": delivery.delivery_id, "outcome": outcome}, label, started)

    from app.webhooks.board.web import mount  # the web board, when OAuth is configured; else /board is 404

    mount(app, settings)

    @app.get("/healthz")
    async def healthz() -> Response:
        backend = str(getattr(deliveries, "backend", type(deliveries).__name__))
        limiter = routes.limiter_status()  # "in-process", "redis", or the fallback while Redis is unreachable
        count = await run_in_threadpool(waiting, deliveries)
        if count is None:  # deliveries are answered 503 meanwhile: the balancer may send them elsewhere
            error = {"status": "error", "queue": backend, "error": QUEUE_DOWN, "limiter": limiter}
            return JSONResponse(error, status_code=503)
        return JSONResponse({"status": "ok", "queue": backend, "waiting": count, "limiter": limiter})

    @app.get("/metrics")
    async def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
