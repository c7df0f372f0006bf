"""Servers for the load benchmark: ``python -m tests.bench.serve interlock|bare PORT``.

``interlock`` is the real webhook service (signature, parsing, routing, metrics) with the handlers that
need no GitHub call; ``bare`` is a FastAPI app whose one route only returns 200 — the peer to compare with.
"""

from __future__ import annotations

import sys

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from app.webhooks.router import default_router
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.webhooks.conftest import SECRET, pem_key


def bare() -> FastAPI:
    app = FastAPI()

    @app.post("/api/github/webhooks")
    async def receive(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"ok": True})

    return app


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    app = bare() if kind == "bare" else create_app(ServiceSettings("1", pem_key(), SECRET), default_router())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
