"""The FastAPI service that receives GitHub's webhook deliveries (SPEC GH8).

Order of work on a delivery, and why:
1. a size limit (25 MB, GitHub's own cap) before reading — a flood of bytes costs nothing;
2. the HMAC-SHA256 signature of the raw body, in constant time, before any parsing — 401 otherwise;
3. the JSON body and the event headers — 400 when malformed; so is a delivery whose handler finds a field
   it needs missing or unsafe (``MalformedDelivery``): nothing changed, and no redelivery could help;
4. the handler for (event, action), within a deadline well under GitHub's 10 s — 2xx when done or
   ignored, 5xx when it failed (nothing is half-applied: each run transition is one compare-and-swap), so
   the delivery shows as failed and ``interlock redeliver`` recovers it.

https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from app.github.config import ConfigInvalid
from app.redact import Redactor
from app.store.github import StateFileUnreadable
from app.store.journal import STATE_BRANCH
from app.webhooks.delivery import Delivery, MalformedDelivery
from app.webhooks.metrics import UNVERIFIED, Metrics
from app.webhooks.router import Outcome, Router
from app.webhooks.settings import ServiceSettings
from app.webhooks.signature import signature_valid

MAX_BODY = 25 * 1024 * 1024
DEADLINE_S = 8.0
RECENT_DELIVERIES = 10_000
WEBHOOK_PATH = "/api/github/webhooks"

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

    return service_router(GitHubApp(settings.app_identity()), library_dirs(), settings.app_slug)


def create_app(
    settings: ServiceSettings, router: Router | None = None, *, deadline_s: float = DEADLINE_S, max_body: int = MAX_BODY
) -> FastAPI:
    app = FastAPI(title="Interlock", docs_url=None, redoc_url=None, openapi_url=None)
    routes = router or github_router(settings)
    metrics = Metrics(frozenset(event for event, _ in routes.handlers))
    recent = RecentDeliveries()
    app.state.metrics = metrics
    app.state.router = routes

    def answer(status: int, body: dict[str, Any], label: str, started: float) -> Response:
        """The response, counted under ``label``: ``UNVERIFIED`` before the signature held, else the event's."""
        metrics.observe(
            label, str(body.get("outcome", body.get("error", status))), status, time.perf_counter() - started
        )
        return JSONResponse(body, status_code=status)

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
        if delivery_id in recent:
            return answer(200, {"delivery": delivery_id, "outcome": Outcome.DUPLICATE}, label, started)
        try:
            if routes.needs_worker(delivery):
                outcome = await asyncio.wait_for(run_in_threadpool(routes.dispatch, delivery), deadline_s)
            else:
                outcome = routes.dispatch(delivery)  # ignored, own, or an inline handler: no thread needed
        except MalformedDelivery as exc:  # a field the handler needs is missing or unsafe: redelivery cannot help
            log.warning("refused %s", str(exc).encode("unicode_escape").decode("ascii"))
            error = {"delivery": delivery_id, "error": "malformed delivery", "detail": str(exc)}
            return answer(400, error, label, started)
        except ConfigInvalid as exc:  # the repository's .github/interlock.yml: a person fixes it, then redelivers
            detail = Redactor().text(str(exc))
            log.warning("refused %s: %s", delivery.describe(), detail.encode("unicode_escape").decode("ascii"))
            error = {"delivery": delivery_id, "error": "repository configuration invalid", "detail": detail}
            return answer(422, error, label, started)
        except StateFileUnreadable as exc:  # a run record broken by hand: a person restores it, then redelivers
            detail = Redactor().text(f"{exc}. Restore it from `git log {STATE_BRANCH} -- {exc.path}`, then redeliver.")
            log.warning("refused %s: %s", delivery.describe(), detail.encode("unicode_escape").decode("ascii"))
            error = {"delivery": delivery_id, "error": "state file unreadable", "detail": detail}
            return answer(422, error, label, started)
        except TimeoutError:
            log.error("deadline of %.1fs passed on %s", deadline_s, delivery.describe())
            return answer(503, {"delivery": delivery_id, "error": "deadline passed; redeliver"}, label, started)
        except Exception:
            log.exception("failed on %s", delivery.describe())
            return answer(500, {"delivery": delivery_id, "error": "handler failed; redeliver"}, label, started)
        recent.add(delivery_id)
        status = 202 if outcome in (Outcome.IGNORED, Outcome.OWN) else 200
        return answer(status, {"delivery": delivery_id, "outcome": outcome}, label, started)

    from app.webhooks.board_web import mount  # the web board, when OAuth is configured; else /board is 404

    mount(app, settings)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    async def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
