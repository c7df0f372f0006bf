"""The embedded delivery queue: one SQLite file in the service's data folder (issue 27, SPEC GH8).

Why SQLite: the queue must outlive the process (a 202 promises the delivery will be applied), keep each
repository's order, and hand a delivery whose worker died to another worker. One table does all three, with
the standard library and nothing to run beside the service. The file is in WAL mode so that readers (``/healthz``,
``record``) never wait for a writer; every change runs in ``BEGIN IMMEDIATE``, which takes SQLite's write lock
before reading, so two processes on the same file never lease the same delivery.
https://www.sqlite.org/lang_transaction.html https://www.sqlite.org/wal.html

Each thread has its own connection (a ``sqlite3`` connection is not to be shared across threads).

What is kept: every delivery until it is applied, failed ones for good (the sweep and a person read them), and
applied ones for ``keep_applied_s`` (7 days by default): older applied rows are deleted as new ones are applied,
so the file stays small. A redelivery of a delivery applied and pruned is queued again; the run journal, keyed
by the same delivery ids, is the last word on whether it changes anything.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from app.webhooks.deliveries.durable import DeliveryRecord, QueuedDelivery, QueueState

T = TypeVar("T")

KEEP_APPLIED_S = 7 * 24 * 3600.0
BUSY_TIMEOUT_S = 30.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    key TEXT NOT NULL,
    body BLOB NOT NULL,
    state TEXT NOT NULL,
    seq INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL DEFAULT '',
    last_error TEXT NOT NULL DEFAULT '',
    received_at REAL NOT NULL,
    not_before REAL NOT NULL DEFAULT 0,
    lease_until REAL NOT NULL DEFAULT 0,
    consumer TEXT NOT NULL DEFAULT '',
    ended_at REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (state, key, seq);
CREATE INDEX IF NOT EXISTS deliveries_ended ON deliveries (state, ended_at);
"""

# The head of each key's order: its open (waiting or leased) delivery of the lowest sequence number. It is
# takeable when waiting past its back-off, or leased with a lease that lapsed.
TAKEABLE = """
SELECT delivery_id, event, key, body, attempts FROM deliveries AS d
WHERE d.state IN ('waiting', 'leased')
  AND d.seq = (SELECT MIN(e.seq) FROM deliveries AS e WHERE e.key = d.key AND e.state IN ('waiting', 'leased'))
  AND ((d.state = 'waiting' AND d.not_before <= :now) OR (d.state = 'leased' AND d.lease_until <= :now))
ORDER BY d.seq LIMIT 1
"""


class SqliteDeliveryQueue:
    """The ``DeliveryQueue`` contract (``app/webhooks/deliveries/durable.py``) on one SQLite file."""

    backend = "sqlite"

    def __init__(
        self, path: Path, *, clock: Callable[[], float] = time.time, keep_applied_s: float = KEEP_APPLIED_S
    ) -> None:
        self.path = path
        self.clock = clock
        self.keep_applied_s = keep_applied_s
        self.local = threading.local()
        self.writing = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._connection()
        connection.execute("PRAGMA journal_mode=WAL")
        connection.executescript(SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self.local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            connection.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across a process crash
            self.local.connection = connection
        return connection

    def _write(self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction: the write lock first, then the read. This
        process's writers queue for it on a lock of their own first: SQLite's busy handler makes a writer that
        finds the file locked sleep, longer each time (up to 100 ms a sleep), so under a worker's steady writes a
        put, which GitHub waits for, slept for seconds; a thread waiting on the lock wakes as soon as it is free.
        Another process on the same file is still waited for by the busy handler."""
        connection = self._connection()
        with self.writing:
            connection.execute("BEGIN IMMEDIATE")
            try:
                result = work(connection, self.clock())
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        return result

    def put(self, item: QueuedDelivery) -> bool:
        def work(db: sqlite3.Connection, now: float) -> bool:
            row = db.execute("SELECT state FROM deliveries WHERE delivery_id = ?", (item.delivery_id,)).fetchone()
            if row is not None and row[0] != QueueState.FAILED:
                return False
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM deliveries").fetchone()[0]
            if row is None:
                db.execute(
                    "INSERT INTO deliveries (delivery_id, event, key, body, state, seq, received_at)"
                    " VALUES (?, ?, ?, ?, 'waiting', ?, ?)",
                    (item.delivery_id, item.event, item.key, item.body, seq, now),
                )
            else:  # failed before: queued again, last in its key's order, its attempts counted afresh
                db.execute(
                    "UPDATE deliveries SET state = 'waiting', seq = ?, body = ?, attempts = 0, outcome = '',"
                    " not_before = 0, lease_until = 0, ended_at = 0 WHERE delivery_id = ?",
                    (seq, item.body, item.delivery_id),
                )
            return True

        return self._write(work)

    def lapse_dead_leases(self) -> int:
        """End at once the leases of this host's processes that are gone (a ``kill -9``, a crash), so that a
        restarted service applies their deliveries now rather than after the visibility timeout. A consumer is
        named ``host:pid:worker``; a lease of another host, or of a live process, is left to lapse by itself."""
        host = socket.gethostname()

        def work(db: sqlite3.Connection, now: float) -> int:
            rows = db.execute("SELECT delivery_id, consumer FROM deliveries WHERE state = 'leased'").fetchall()
            dead = [delivery_id for delivery_id, consumer in rows if dead_here(str(consumer), host)]
            for delivery_id in dead:
                db.execute("UPDATE deliveries SET lease_until = 0 WHERE delivery_id = ?", (delivery_id,))
            return len(dead)

        return self._write(work)

    def take(self, consumer: str, visibility_s: float) -> QueuedDelivery | None:
        def work(db: sqlite3.Connection, now: float) -> QueuedDelivery | None:
            row = db.execute(TAKEABLE, {"now": now}).fetchone()
            if row is None:
                return None
            delivery_id, event, key, body, attempts = row
            db.execute(
                "UPDATE deliveries SET state = 'leased', attempts = attempts + 1, lease_until = ?, consumer = ?"
                " WHERE delivery_id = ?",
                (now + visibility_s, consumer, delivery_id),
            )
            return QueuedDelivery(delivery_id, event, key, bytes(body), attempts)

        return self._write(work)

    def done(self, delivery_id: str, outcome: str) -> None:
        def work(db: sqlite3.Connection, now: float) -> None:
            db.execute(
                "UPDATE deliveries SET state = 'applied', outcome = ?, ended_at = ?, lease_until = 0"
                " WHERE delivery_id = ? AND state = 'leased'",
                (outcome, now, delivery_id),
            )
            db.execute("DELETE FROM deliveries WHERE state = 'applied' AND ended_at < ?", (now - self.keep_applied_s,))

        self._write(work)

    def fail(self, delivery_id: str, reason: str) -> None:
        self._end(delivery_id, "failed", reason)

    def _end(self, delivery_id: str, state: str, outcome: str) -> None:
        self._write(
            lambda db, now: db.execute(
                "UPDATE deliveries SET state = ?, outcome = ?, ended_at = ?, lease_until = 0"
                " WHERE delivery_id = ? AND state IN ('waiting', 'leased')",
                (state, outcome, now, delivery_id),
            )
        )

    def retry(self, delivery_id: str, error: str, delay_s: float, counted: bool = True) -> None:
        self._write(
            lambda db, now: db.execute(
                "UPDATE deliveries SET state = 'waiting', last_error = ?, not_before = ?, lease_until = 0,"
                " attempts = attempts - ? WHERE delivery_id = ? AND state = 'leased'",
                (error, now + delay_s, 0 if counted else 1, delivery_id),
            )
        )

    def record(self, delivery_id: str) -> DeliveryRecord | None:
        row = (
            self._connection()
            .execute(
                "SELECT delivery_id, event, key, state, attempts, outcome, received_at FROM deliveries"
                " WHERE delivery_id = ?",
                (delivery_id,),
            )
            .fetchone()
        )
        if row is None:
            return None
        return DeliveryRecord(row[0], row[1], row[2], QueueState(row[3]), row[4], row[5], row[6])

    def counts(self) -> dict[QueueState, int]:
        rows = self._connection().execute("SELECT state, COUNT(*) FROM deliveries GROUP BY state").fetchall()
        found = {QueueState(state): count for state, count in rows}
        return {state: found.get(state, 0) for state in QueueState}


def dead_here(consumer: str, host: str) -> bool:
    name, _, rest = consumer.partition(":")
    pid = rest.partition(":")[0]
    if name != host or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False
