"""A real service process for the kill -9 tests: ``python -m tests.webhooks.slow_service PORT APPLIED [JOURNAL]``.

The real ``create_app`` (signature, the queue ``INTERLOCK_*`` picks: SQLite in ``INTERLOCK_DATA_DIR``, or Redis
with ``INTERLOCK_REDIS_URL``; workers) with one slow handler that appends the delivery id to ``APPLIED`` each time
it runs, so that another process can count what was applied. With ``JOURNAL``, it also records the delivery the
way the run journal does, keyed by its id: once, whatever the number of runs (a line ``ID PID`` appended under an
exclusive ``flock`` only if the id is not there yet), so that two service processes sharing one file are counted
as one journal.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

import uvicorn

from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome, Router
from app.webhooks.service import create_app
from app.webhooks.settings import settings_from_env

HANDLER_S = float(os.environ.get("SLOW_HANDLER_S", "0.05"))  # long enough that a kill lands while deliveries run


def append(path: Path, line: str) -> None:
    with path.open("a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def journal_once(path: Path, delivery_id: str) -> None:
    """Record ``delivery_id`` in the journal unless it is there: the check and the append under one lock."""
    with path.open("a+") as journal:
        fcntl.flock(journal, fcntl.LOCK_EX)
        journal.seek(0)
        if delivery_id not in {line.split()[0] for line in journal.read().splitlines() if line}:
            journal.write(f"{delivery_id} {os.getpid()}\n")
            journal.flush()
            os.fsync(journal.fileno())


def main() -> None:
    port, applied = int(sys.argv[1]), Path(sys.argv[2])
    journal = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    router = Router()

    @router.on("issues", "labeled")
    def labeled(delivery: Delivery) -> Outcome:
        time.sleep(HANDLER_S)
        append(applied, delivery.delivery_id)
        if journal is not None:
            journal_once(journal, delivery.delivery_id)
        return Outcome.HANDLED

    uvicorn.run(create_app(settings_from_env(), router), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
