"""A real service process for the kill -9 test: ``python -m tests.webhooks.slow_service PORT APPLIED_FILE``.

The real ``create_app`` (signature, queue in ``INTERLOCK_DATA_DIR``, workers) with one slow handler that appends
the delivery id to ``APPLIED_FILE`` once it is applied, so that another process can count what was applied.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import uvicorn

from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome, Router
from app.webhooks.service import create_app
from app.webhooks.settings import settings_from_env

HANDLER_S = 0.05  # long enough that a kill lands while deliveries wait and run


def main() -> None:
    port, applied = int(sys.argv[1]), Path(sys.argv[2])
    router = Router()

    @router.on("issues", "labeled")
    def labeled(delivery: Delivery) -> Outcome:
        time.sleep(HANDLER_S)
        with applied.open("a") as out:
            out.write(delivery.delivery_id + "\n")
            out.flush()
            os.fsync(out.fileno())
        return Outcome.HANDLED

    uvicorn.run(create_app(settings_from_env(), router), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
