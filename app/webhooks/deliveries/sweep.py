"""The service's periodic sweep of failed deliveries (SPEC GH8): GitHub never redelivers by itself, so the
service asks it to, with no person needed.
https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries

Every ``INTERLOCK_SWEEP_S`` seconds (``app/webhooks/deliveries/sweep_settings.py``) a thread of the service:
1. takes the sweep lock for most of the interval, so that one replica sweeps per interval, the fleet over
   (``app/webhooks/deliveries/sweep_lock.py``); a replica that finds it taken waits for its next turn;
2. lists the App's deliveries newer than ``INTERLOCK_SWEEP_LOOKBACK`` and keeps those whose every attempt
   failed — a redelivery GitHub already made that succeeded counts — with the listing ``interlock redeliver``
   reads (``app/github/redeliver.py``: App JWT, ``Link`` pagination, a malformed page refused);
3. skips those the delivery queue holds waiting, leased or applied: GitHub saw a failure (a slow answer, say)
   yet the service has the delivery. GitHub's ``guid`` is the ``X-GitHub-Delivery`` id the queue is keyed by;
   the listing's ``id`` names one attempt, the one asked to be made again;
4. claims each of the others in the ledger, which refuses one already asked for within the lookback and any
   beyond ``INTERLOCK_SWEEP_MAX_PER_HOUR`` in the rolling hour, the fleet over; then asks GitHub for one more
   attempt of each claimed. An ask GitHub refuses is unclaimed, so that the next sweep asks again.

Any error ends that sweep only: it is logged, the lock is let go, and the next sweep tries again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from typing import assert_never

from app.github.client import GitHubApp, Installation
from app.github.redeliver import ListingMalformed, Redelivery, failed_deliveries, redeliver_one
from app.webhooks.deliveries.durable import DeliveryQueue, QueueState
from app.webhooks.deliveries.sweep_lock import (
    HOUR_S,
    Claim,
    ProcessLedger,
    ProcessLock,
    SweepLedger,
    SweepLock,
    redis_pieces,
)
from app.webhooks.deliveries.sweep_settings import SweepSettings

LOCK_SHARE = 0.9  # of the interval the lock is held: it lapses before the next tick of whoever holds it
STOP_WAIT_S = 10.0
HELD = (QueueState.WAITING, QueueState.LEASED, QueueState.APPLIED)  # the service has it: no redelivery

log = logging.getLogger("interlock.webhooks")


@dataclass
class SweepReport:
    """What one sweep did, by guid: each failed delivery in the lookback ends in exactly one list."""

    held: list[str] = field(default_factory=list)  # the queue has it
    asked_before: list[str] = field(default_factory=list)  # asked for within the lookback already
    over_bound: list[str] = field(default_factory=list)  # the hour's bound was reached
    refused: list[str] = field(default_factory=list)  # GitHub refused the ask: the next sweep asks again
    swept: list[str] = field(default_factory=list)  # GitHub was asked for one more attempt


@dataclass(eq=False, repr=False)
class Sweeper:
    """One replica's sweeper; ``sweep`` once, or ``start`` a thread that ``tick``s every interval."""

    app: Installation
    queue: DeliveryQueue
    settings: SweepSettings
    _: KW_ONLY
    lock: SweepLock
    ledger: SweepLedger
    on_swept: Callable[[], None] = lambda: None  # the metrics' ``swept`` counter
    clock: Callable[[], float] = time.time
    stopping: threading.Event = field(default_factory=threading.Event, init=False)
    thread: threading.Thread | None = field(default=None, init=False)

    def sweep(self) -> SweepReport | None:
        """One sweep, or None when another replica swept within this interval; errors raise, the lock let go."""
        token = self.lock.acquire(self.settings.interval_s * LOCK_SHARE)
        if token is None:
            return None
        try:
            return self._sweep()
        except BaseException:
            self.lock.release(token)  # let the next tick of any replica try again
            raise

    def _sweep(self) -> SweepReport:
        now = self.clock()
        self.ledger.forget_before(now - max(self.settings.lookback.total_seconds(), HOUR_S))
        report = SweepReport()
        for delivery in failed_deliveries(self.app, self.settings.lookback, datetime.fromtimestamp(now, UTC)):
            record = self.queue.record(delivery.guid)
            if record is not None and record.state in HELD:
                report.held.append(delivery.guid)
                continue
            self._ask(delivery, now, report)
        if report.swept or report.over_bound or report.refused:
            log.info(
                "sweep: %d failed deliveries redelivered, %d left for the next hour (bound %d), %d refused by GitHub",
                len(report.swept),
                len(report.over_bound),
                self.settings.max_per_hour,
                len(report.refused),
            )
        return report

    def _ask(self, delivery: Redelivery, now: float, report: SweepReport) -> None:
        match self.ledger.claim(delivery.guid, now, self.settings.max_per_hour):
            case Claim.ASKED:
                report.asked_before.append(delivery.guid)
            case Claim.FULL:
                report.over_bound.append(delivery.guid)
            case Claim.CLAIMED:
                try:
                    redeliver_one(self.app, delivery)
                except Exception as exc:
                    self.ledger.unclaim(delivery.guid)
                    log.warning("sweep: GitHub refused to redeliver %s (%s): %s", delivery.guid, delivery.event, exc)
                    report.refused.append(delivery.guid)
                    return
                report.swept.append(delivery.guid)
                self.on_swept()
            case _ as unreachable:
                assert_never(unreachable)

    def tick(self) -> SweepReport | None:
        """``sweep``, never raising: an error is logged and the next tick tries again."""
        try:
            return self.sweep()
        except ListingMalformed as exc:
            log.error("sweep refused: %s; nothing redelivered, the next sweep tries again", exc)
        except Exception:
            log.exception("sweep failed; nothing more redelivered, the next sweep tries again")
        return None

    def start(self) -> None:
        if self.thread is not None:
            return
        self.thread = threading.Thread(target=self.loop, name="interlock-sweep", daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.stopping.wait(self.settings.interval_s):
            self.tick()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout=STOP_WAIT_S)


def service_sweeper(
    settings: SweepSettings | None,
    github: GitHubApp,
    queue: DeliveryQueue,
    redis_url: str | None,
    on_swept: Callable[[], None],
) -> Sweeper | None:
    """The service's sweeper: None when the sweep is off (``INTERLOCK_SWEEP_S=0``); its lock and ledger in
    Redis when the replicas share one, else in this process."""
    if settings is None:
        return None
    if redis_url is None:
        lock: SweepLock = ProcessLock()
        ledger: SweepLedger = ProcessLedger()
    else:
        lock, ledger = redis_pieces(redis_url)
    return Sweeper(github.as_app(), queue, settings, lock=lock, ledger=ledger, on_swept=on_swept)
