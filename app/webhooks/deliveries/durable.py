"""The durable queue between a delivery's acknowledgement and its application (SPEC GH8, issue 27).

The service verifies a delivery's signature, ``put``s it here and answers 202; workers ``take`` deliveries
and apply them. Two backends keep this contract: the embedded SQLite queue in the service's data folder (one
process, the default; ``app/webhooks/deliveries/sqlite_queue.py``) and Redis (several replicas, ``INTERLOCK_REDIS_URL``;
``app/webhooks/deliveries/redis_queue.py``).

The contract, which both backends' tests check alike:
- ``put`` is idempotent by delivery id: a redelivery of a delivery already queued, running or applied is not
  queued again (``False``), so it is applied at most once by the queue; the run journal, keyed by the same ids,
  remains the last word.
- ``take`` leases the oldest waiting delivery whose ordering ``key`` (the repository) holds no live lease: a
  repository's deliveries are applied in the order they were acknowledged and never two at once, across
  replicas. A lease not ended within ``visibility_s`` (its worker died) lapses, and the delivery is taken
  again by any worker.
- ``done`` ends a lease for good (``APPLIED``, with the router's outcome); ``fail`` ends it without applying
  (``FAILED``: a refused delivery, or one that failed every attempt allowed), with the reason; ``retry`` ends it
  and makes the delivery takeable again after ``delay_s``, still first in its key's order.
- A ``put`` of a delivery that ``FAILED`` queues it again (a person fixed the cause and redelivered); of one
  waiting, leased or applied it changes nothing.
- ``record`` tells what the queue knows of a delivery; ``counts`` how many are in each state.
- A backend whose store cannot be reached (Redis down) raises ``QueueUnavailable`` from any call. The call may
  still have taken effect (a timeout after the server ran it), and each is safe either way: a ``put`` repeated
  is a duplicate, a lease whose end was not recorded lapses. The service answers 503 to a ``put`` that raised,
  so GitHub records a failed delivery that is redelivered; a worker leaves its lease to lapse.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class QueueState(StrEnum):
    """What the queue stores of a delivery: the values are the stored ones."""

    WAITING = "waiting"
    LEASED = "leased"
    APPLIED = "applied"
    FAILED = "failed"  # gave up after the attempts allowed: counted, kept for the sweep and a person


class QueueUnavailable(Exception):
    """The queue's store cannot be reached (a connection refused or timed out)."""


@dataclass(frozen=True)
class QueuedDelivery:
    delivery_id: str
    event: str
    key: str  # the ordering key: the repository's full name, or the delivery id when it names none
    body: bytes  # the raw body as GitHub sent it (its signature already checked)
    attempts: int = 0  # how many times it was taken before this take


@dataclass(frozen=True)
class DeliveryRecord:
    delivery_id: str
    event: str
    key: str
    state: QueueState
    attempts: int  # how many times it was taken
    outcome: str  # the router's outcome once applied; the reason once failed; "" before
    received_at: float  # epoch seconds of its first put


class DeliveryQueue(Protocol):
    def put(self, item: QueuedDelivery) -> bool: ...

    def take(self, consumer: str, visibility_s: float) -> QueuedDelivery | None: ...

    def done(self, delivery_id: str, outcome: str) -> None: ...

    def fail(self, delivery_id: str, reason: str) -> None: ...

    def retry(self, delivery_id: str, error: str, delay_s: float, counted: bool = True) -> None:
        """Back to waiting, not before ``delay_s``, first in its key's order; ``counted=False`` gives the take's
        attempt back (a wait for the content quota is no failure of the delivery)."""
        ...

    def record(self, delivery_id: str) -> DeliveryRecord | None: ...

    def counts(self) -> dict[QueueState, int]: ...
