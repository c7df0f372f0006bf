"""The FastAPI service that receives GitHub's webhook deliveries (SPEC GH8): the parts wired together.

What one POST goes through, and why in that order, is ``app/webhooks/receiver.py``: a delivery a handler needs a
thread for is stored in the durable delivery queue (``app/webhooks/deliveries/durable.py``) and answered 202 well
within GitHub's 10 s; the workers (``app/webhooks/deliveries/workers.py``) apply it.

Which queue (``default_queue``): with ``INTERLOCK_REDIS_URL`` set, Redis, shared by every replica. If Redis does
not answer when the service starts, it does not refuse to start (a delivery is never failed over Redis): it
logs so and queues in its own SQLite file in the data folder, and ``/healthz`` says ``"queue": "sqlite"``, until
it is restarted with Redis reachable. Deliveries it acknowledged meanwhile are applied from that file.

Beside them, the sweep (``app/webhooks/deliveries/sweep.py``) asks GitHub every few minutes to redeliver what failed.

https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from app.github.client import GitHubApp
from app.webhooks.deliveries.durable import DeliveryQueue, QueueState, QueueUnavailable
from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue
from app.webhooks.deliveries.sweep import Sweeper, service_sweeper
from app.webhooks.deliveries.workers import RETRY_BASE_S, Workers
from app.webhooks.metrics import Metrics
from app.webhooks.receiver import QUEUE_DOWN, Receiver
from app.webhooks.router import Router
from app.webhooks.settings import ServiceSettings

MAX_BODY = 25 * 1024 * 1024
DEADLINE_S = 8.0  # a bound for waits inside a handler (app/github/throttle.py); no longer on the answer
QUEUE_FILE = "queue.sqlite3"
WEBHOOK_PATH = "/api/github/webhooks"

log = logging.getLogger("interlock.webhooks")


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


def workers_for(
    settings: ServiceSettings, deliveries: DeliveryQueue, routes: Router, metrics: Metrics, retry_base_s: float
) -> Workers:
    """The workers that apply the queued deliveries, as the settings say, counted in the metrics."""
    return Workers(
        deliveries,
        routes,
        count=settings.workers,
        attempts=settings.delivery_attempts,
        visibility_s=settings.visibility_s,
        on_end=metrics.count_queue,
        retry_base_s=retry_base_s,
    )


def lifespan_of(workers: Workers, sweeper: Sweeper | None) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The service's lifespan: the workers and the sweep start with it and are stopped when it ends."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        workers.start()  # deliveries a previous process left waiting or leased are applied now
        if sweeper is not None:
            sweeper.start()
        yield
        if sweeper is not None:
            await run_in_threadpool(sweeper.stop)
        await run_in_threadpool(workers.stop)

    return lifespan


def create_app(
    settings: ServiceSettings,
    router: Router | None = None,
    *,
    max_body: int = MAX_BODY,
    queue: DeliveryQueue | None = None,
    retry_base_s: float = RETRY_BASE_S,
    github: GitHubApp | None = None,
) -> FastAPI:
    """The service: the webhook endpoint (``app/webhooks/receiver.py``), the web board, ``/healthz`` and
    ``/metrics``, over the delivery queue, its workers and the sweep."""
    routes = router or github_router(settings)
    deliveries = queue if queue is not None else default_queue(settings)
    metrics = Metrics(frozenset(event for event, _ in routes.handlers))
    metrics.waiting = lambda: waiting(deliveries)
    workers = workers_for(settings, deliveries, routes, metrics, retry_base_s)
    sweeper = sweeper_for(settings, github, deliveries, metrics)
    lifespan = lifespan_of(workers, sweeper)
    app = FastAPI(title="Interlock", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.metrics = metrics
    app.state.router = routes
    app.state.queue = deliveries
    app.state.workers = workers
    app.state.sweeper = sweeper
    counts = deliveries.counts()
    if counts[QueueState.WAITING] or counts[QueueState.LEASED]:
        workers.start()  # without a lifespan (a TestClient used without ``with``) the restart still resumes
    receiver = Receiver(settings.webhook_secret, routes, deliveries, workers, metrics, max_body)
    app.add_api_route(WEBHOOK_PATH, receiver.receive, methods=["POST"])

    from app.webhooks.board.web import mount  # the web board, when OAuth is configured; else /board is 404

    mount(app, settings)
    serve_health(app, deliveries, routes, metrics)
    return app


def serve_health(app: FastAPI, deliveries: DeliveryQueue, routes: Router, metrics: Metrics) -> None:
    """``/healthz`` (the queue's backend and how many wait, the limiter's) and ``/metrics`` for Prometheus."""

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
