"""Servers for the load benchmark: ``python -m tests.bench.serve interlock|bare PORT``.

``interlock`` is the real webhook service (signature, parsing, routing, metrics) with the handlers that
need no GitHub call; ``bare`` is a FastAPI app whose one route only returns 200 — the peer to compare with.
Each process imports only what its server needs (the bare app never loads Interlock, the service never loads
pytest): their resident memory is compared. The service's App key and webhook secret come from the benchmark
(``BENCH_APP_KEY``, ``BENCH_WEBHOOK_SECRET``), which makes them as the webhook tests do.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import uvicorn


def bare() -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    app = FastAPI()

    @app.post("/api/github/webhooks")
    async def receive(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"ok": True})

    return app


def interlock() -> Any:
    from app.webhooks.router import default_router
    from app.webhooks.service import create_app
    from app.webhooks.settings import ServiceSettings

    secret = os.environ["BENCH_WEBHOOK_SECRET"].encode()
    return create_app(ServiceSettings("1", os.environ["BENCH_APP_KEY"], secret), default_router())


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    app = bare() if kind == "bare" else interlock()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
