"""The threads that apply queued deliveries: take, decode, dispatch, then done, fail or retry (issue 27).

The service answered GitHub 202 once the delivery was in the queue; here is the work. No per-delivery deadline
applies: GitHub's 10 s limit is on the answer, which was already given, and a handler that waits out GitHub's
rate limit should be let finish. The queue's visibility timeout (``INTERLOCK_VISIBILITY_S``, longer than any
handler) is what hands a delivery to another worker if this one died.

A refusal (``MalformedDelivery``, ``ConfigInvalid``, ``StateFileUnreadable``) fails the delivery at once with the
same redacted detail the service used to answer 400/422 with: no retry could help; a person fixes the cause and
redelivers. Any other exception is retried with exponential back-off, up to ``INTERLOCK_DELIVERY_ATTEMPTS``
takes, then fails. A queue that cannot be reached (Redis down) stops no worker: a take waits for it, and a
delivery whose end could not be recorded is taken again once its lease lapses.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable

from app.github.client import RateLimited
from app.github.config import ConfigInvalid
from app.github.throttle import ContentQuotaFull
from app.redact import Redactor
from app.store.github import StateFileUnreadable
from app.store.journal import STATE_BRANCH
from app.webhooks.deliveries.durable import DeliveryQueue, QueuedDelivery, QueueUnavailable
from app.webhooks.delivery import Delivery, MalformedDelivery
from app.webhooks.router import Router

RETRY_BASE_S = 1.0  # the first back-off; doubled on each attempt
RETRY_CAP_S = 300.0
QUOTA_WAIT_CAP_S = 3600.0  # the hourly window: no wait for the content quota is longer
IDLE_WAIT_S = 0.5  # how long an idle worker waits before looking again (a put wakes it sooner)

CONSUMER_PREFIX = f"{socket.gethostname()}:{os.getpid()}"

log = logging.getLogger("interlock.webhooks")


def escaped(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


def refusal(delivery: Delivery, exc: Exception) -> str | None:
    """The redacted reason a delivery is refused for good, or None for an error a retry may cure."""
    match exc:
        case MalformedDelivery():
            log.warning("refused %s", escaped(str(exc)))
            return f"malformed delivery: {exc}"
        case ConfigInvalid():
            detail = Redactor().text(str(exc))
            log.warning("refused %s: %s", delivery.describe(), escaped(detail))
            return f"repository configuration invalid: {detail}"
        case StateFileUnreadable():
            detail = Redactor().text(f"{exc}. Restore it from `git log {STATE_BRANCH} -- {exc.path}`, then redeliver.")
            log.warning("refused %s: %s", delivery.describe(), escaped(detail))
            return f"state file unreadable: {detail}"
        case _:
            return None


def decode(item: QueuedDelivery) -> Delivery:
    """The delivery as the service read it before queueing (its body was a JSON object then)."""
    payload = json.loads(item.body)
    if not isinstance(payload, dict):
        raise MalformedDelivery("the body is not a JSON object")
    return Delivery(item.event, item.delivery_id, payload)


class Workers:
    """``count`` daemon threads applying deliveries from ``queue`` with ``router``; started once, lazily."""

    def __init__(
        self,
        queue: DeliveryQueue,
        router: Router,
        *,
        count: int,
        attempts: int,
        visibility_s: float,
        on_end: Callable[[str], None] = lambda kind: None,
        retry_base_s: float = RETRY_BASE_S,
    ) -> None:
        self.queue = queue
        self.router = router
        self.count = count
        self.attempts = attempts
        self.visibility_s = visibility_s
        self.on_end = on_end  # "applied", "retried", "deferred" or "failed": the metrics' counters
        self.retry_base_s = retry_base_s
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()
        self.down = False  # the queue could not be reached at the last take: logged once until it answers

    def start(self) -> None:
        with self.lock:
            if self.threads:
                return
            for index in range(self.count):
                consumer = f"{CONSUMER_PREFIX}:worker-{index}"  # the host and process: see lapse_dead_leases
                thread = threading.Thread(target=self.loop, args=(consumer,), daemon=True)
                thread.name = f"interlock-worker-{index}"
                self.threads.append(thread)
                thread.start()

    def notify(self) -> None:
        """A delivery was put: start the workers if they are not yet, and wake an idle one."""
        self.start()
        self.wake.set()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        for thread in self.threads:
            thread.join(timeout=self.visibility_s)

    def loop(self, consumer: str) -> None:
        while not self.stopping.is_set():
            item = self.next_item(consumer)
            if item is None:
                self.wake.wait(IDLE_WAIT_S)
                self.wake.clear()
                continue
            try:
                self.apply(item)
            except QueueUnavailable as exc:  # the thread lives on; the lease not ended lapses
                log.warning(
                    "the end of %s could not be recorded (%s): it is applied again once its lease lapses, which"
                    " the run journal, keyed by its delivery id, makes change nothing",
                    escaped(item.delivery_id),
                    exc,
                )

    def next_item(self, consumer: str) -> QueuedDelivery | None:
        """The next delivery to apply, or None; a queue that cannot be reached is logged once, not each poll."""
        try:
            item = self.queue.take(consumer, self.visibility_s)
        except QueueUnavailable as exc:
            with self.lock:
                if not self.down:
                    self.down = True
                    log.warning("the delivery queue is unreachable (%s): the workers wait for it", exc)
            return None
        except Exception:
            log.exception("the delivery queue could not be read")
            return None
        with self.lock:
            if self.down:
                self.down = False
                log.warning("the delivery queue answers again: the workers apply deliveries")
        return item

    def apply(self, item: QueuedDelivery) -> None:
        try:
            delivery = decode(item)
        except (ValueError, RecursionError) as exc:
            self.end_failed(item, f"malformed delivery: {exc}")
            return
        try:
            outcome = self.router.dispatch(delivery)
        except Exception as exc:
            reason = refusal(delivery, exc)
            if reason is not None:
                self.end_failed(item, reason)
            elif isinstance(exc, ContentQuotaFull | RateLimited):
                self.wait_for_quota(item, delivery, exc)
            else:
                self.retry_or_fail(item, delivery, exc)
            return
        self.queue.done(item.delivery_id, str(outcome))
        self.on_end("applied")

    def retry_or_fail(self, item: QueuedDelivery, delivery: Delivery, exc: Exception) -> None:
        taken = item.attempts + 1
        error = Redactor().text(f"{type(exc).__name__}: {exc}")
        if taken >= self.attempts:
            log.error("failed on %s after %d attempts", delivery.describe(), taken, exc_info=exc)
            self.end_failed(item, f"handler failed after {taken} attempts: {error}")
            return
        delay = min(RETRY_CAP_S, self.retry_base_s * 2**item.attempts)
        log.warning("attempt %d on %s failed (%s); again in %.1fs", taken, delivery.describe(), escaped(error), delay)
        self.queue.retry(item.delivery_id, error, delay)
        self.on_end("retried")

    def wait_for_quota(self, item: QueuedDelivery, delivery: Delivery, exc: ContentQuotaFull | RateLimited) -> None:
        """The installation's content quota is full, or GitHub answered with a rate limit: the delivery waits
        until the quota has room or GitHub's wait is over, its attempt given back, however long that is. Failing it
        after a few back-offs would lose it: GitHub saw a 202, so neither its failed-deliveries list nor the sweep
        would ever bring it back."""
        delay = min(QUOTA_WAIT_CAP_S, max(RETRY_BASE_S, exc.wait_s))
        log.info("%s waits %.1fs for the content quota (%s)", delivery.describe(), delay, escaped(str(exc)))
        self.queue.retry(item.delivery_id, Redactor().text(str(exc)), delay, counted=False)
        self.on_end("deferred")

    def end_failed(self, item: QueuedDelivery, reason: str) -> None:
        self.queue.fail(item.delivery_id, reason)
        self.on_end("failed")
