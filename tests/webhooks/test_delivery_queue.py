"""The delivery queue's contract (``app/webhooks/deliveries/durable.py``), one suite for every backend (SPEC GH8).

Each test runs on every backend in ``BACKENDS``: the embedded SQLite file and Redis (a real redis-server, from
``tests/redis_server.py``; each test has its own key prefix). Time is injected (a ``clock``), so leases lapse and
back-offs end without sleeping. The Redis-specific tests across processes are in ``test_redis_queue.py``.
"""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from app.webhooks.deliveries.durable import DeliveryQueue, QueuedDelivery, QueueState
from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from app.webhooks.deliveries.sqlite_queue import KEEP_APPLIED_S, SqliteDeliveryQueue


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# A backend: from the test's request (for the fixtures a backend needs), its tmp folder, the clock, and how long
# applied records are kept.
Factory = Callable[[pytest.FixtureRequest, Path, Clock, float], DeliveryQueue]


def sqlite_queue(request: pytest.FixtureRequest, folder: Path, clock: Clock, keep: float) -> DeliveryQueue:
    return SqliteDeliveryQueue(folder / "queue.sqlite3", clock=clock, keep_applied_s=keep)


def redis_queue(request: pytest.FixtureRequest, folder: Path, clock: Clock, keep: float) -> DeliveryQueue:
    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    return RedisDeliveryQueue(client, prefix=f"test:{uuid.uuid4().hex}", clock=clock, keep_applied_s=keep)


BACKENDS: dict[str, Factory] = {"sqlite": sqlite_queue, "redis": redis_queue}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Callable[..., DeliveryQueue]:
    factory = BACKENDS[request.param]
    tmp_path: Path = request.getfixturevalue("tmp_path")
    clock: Clock = request.getfixturevalue("clock")
    return lambda keep_applied_s=KEEP_APPLIED_S: factory(request, tmp_path, clock, keep_applied_s)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(backend: Callable[..., DeliveryQueue]) -> DeliveryQueue:
    return backend()


def item(delivery_id: str, key: str = "o/r") -> QueuedDelivery:
    return QueuedDelivery(delivery_id, "issues", key, b'{"id": "' + delivery_id.encode() + b'"}')


def test_put_is_idempotent_by_delivery_id(queue: DeliveryQueue) -> None:
    # SPEC GH8: a redelivery of a delivery queued, running or applied is not queued again
    assert queue.put(item("a")) is True
    assert queue.put(item("a")) is False
    taken = queue.take("w1", 60)
    assert taken is not None and taken.delivery_id == "a"
    assert queue.put(item("a")) is False  # leased
    queue.done("a", "handled")
    assert queue.put(item("a")) is False  # applied
    assert queue.take("w1", 60) is None
    record = queue.record("a")
    assert record is not None and record.state is QueueState.APPLIED and record.outcome == "handled"


def test_a_keys_deliveries_come_in_order_never_two_at_once(queue: DeliveryQueue) -> None:
    # SPEC GH8: one repository's deliveries are applied in the order acknowledged, one at a time
    for name in ("a", "b", "c"):
        queue.put(item(name))
    first = queue.take("w1", 60)
    assert first is not None and first.delivery_id == "a" and first.body == b'{"id": "a"}'
    assert queue.take("w2", 60) is None  # "b" waits for "a"
    queue.done("a", "handled")
    second = queue.take("w2", 60)
    assert second is not None and second.delivery_id == "b"
    queue.done("b", "handled")
    third = queue.take("w1", 60)
    assert third is not None and third.delivery_id == "c"


def test_other_keys_proceed_while_one_is_leased(queue: DeliveryQueue) -> None:
    # SPEC GH8: a busy repository does not hold up another
    queue.put(item("a1", "o/a"))
    queue.put(item("a2", "o/a"))
    queue.put(item("b1", "o/b"))
    taken = [queue.take("w1", 60), queue.take("w2", 60), queue.take("w3", 60)]
    assert [t.delivery_id if t else None for t in taken] == ["a1", "b1", None]


def test_a_lapsed_lease_is_taken_again_with_its_attempts_counted(queue: DeliveryQueue, clock: Clock) -> None:
    # SPEC GH8: a worker that died leaves its delivery to another once the visibility timeout passed
    queue.put(item("a"))
    queue.put(item("b"))
    first = queue.take("dead", 30)
    assert first is not None and first.attempts == 0
    clock.advance(29)
    assert queue.take("w2", 30) is None  # still leased, and "b" waits behind it
    clock.advance(2)
    again = queue.take("w2", 30)
    assert again is not None and again.delivery_id == "a" and again.attempts == 1
    record = queue.record("a")
    assert record is not None and record.state is QueueState.LEASED and record.attempts == 2


def test_a_retry_waits_its_delay_and_keeps_its_place(queue: DeliveryQueue, clock: Clock) -> None:
    # SPEC GH8: a delivery retried stays first in its repository's order
    queue.put(item("a"))
    queue.put(item("b"))
    queue.put(item("x", "o/other"))
    taken = queue.take("w1", 60)
    assert taken is not None and taken.delivery_id == "a"
    queue.retry("a", "GitHub answered 502", 10)
    other = queue.take("w1", 60)
    assert other is not None and other.delivery_id == "x"  # "b" may not pass "a"
    assert queue.take("w1", 60) is None
    clock.advance(10)
    again = queue.take("w1", 60)
    assert again is not None and again.delivery_id == "a" and again.attempts == 1
    record = queue.record("a")
    assert record is not None and record.state is QueueState.LEASED and record.outcome == ""


def test_a_deferral_gives_its_attempt_back_and_keeps_its_place(queue: DeliveryQueue, clock: Clock) -> None:
    # SPEC GH8: a wait for the content quota is no failed attempt, however often it comes; a failure still counts
    queue.put(item("a"))
    queue.put(item("b"))
    for _ in range(3):
        taken = queue.take("w1", 60)
        assert taken is not None and (taken.delivery_id, taken.attempts) == ("a", 0)
        queue.retry("a", "the installation's content quota is full", 30, counted=False)
        assert queue.take("w1", 60) is None  # "b" waits behind it
        clock.advance(30)
    taken = queue.take("w1", 60)
    assert taken is not None and taken.attempts == 0
    queue.retry("a", "GitHub answered 502", 1)
    clock.advance(1)
    again = queue.take("w1", 60)
    assert again is not None and again.attempts == 1


def test_a_failed_delivery_is_queued_again_by_a_put(queue: DeliveryQueue) -> None:
    # SPEC GH8: a refused delivery is kept with its reason; a redelivery after a fix queues it again
    queue.put(item("a"))
    queue.put(item("b"))
    queue.take("w1", 60)
    queue.fail("a", "repository configuration invalid: line 3")
    record = queue.record("a")
    assert record is not None and record.state is QueueState.FAILED
    assert record.outcome == "repository configuration invalid: line 3"
    nxt = queue.take("w1", 60)
    assert nxt is not None and nxt.delivery_id == "b"  # a failure no longer blocks its key
    queue.done("b", "handled")
    assert queue.put(item("a")) is True
    again = queue.take("w1", 60)
    assert again is not None and again.delivery_id == "a"
    assert queue.record("a") is not None


def test_counts_and_record(queue: DeliveryQueue) -> None:
    assert queue.record("nothing") is None
    assert queue.counts() == dict.fromkeys(QueueState, 0)
    for name, key in (("a", "o/a"), ("b", "o/b"), ("c", "o/c"), ("d", "o/a")):
        queue.put(item(name, key))
    queue.take("w", 60)  # a
    queue.take("w", 60)  # b
    queue.done("b", "handled")
    queue.take("w", 60)  # c
    queue.fail("c", "malformed delivery")
    counts = queue.counts()
    assert counts == {QueueState.WAITING: 1, QueueState.LEASED: 1, QueueState.APPLIED: 1, QueueState.FAILED: 1}
    record = queue.record("d")
    assert record is not None and (record.event, record.key, record.attempts) == ("issues", "o/a", 0)


def test_applied_records_are_pruned_after_a_while(backend: Callable[..., DeliveryQueue], clock: Clock) -> None:
    # the SQLite file and Redis stay small: applied records older than keep_applied_s go as new ones are applied
    queue = backend(keep_applied_s=100)
    queue.put(item("old"))
    queue.take("w", 60)
    queue.done("old", "handled")
    clock.advance(101)
    queue.put(item("new"))
    queue.take("w", 60)
    queue.done("new", "handled")
    assert queue.record("old") is None
    assert queue.record("new") is not None
    assert queue.counts()[QueueState.APPLIED] == 1


def _work(path: str, applied: multiprocessing.Queue[str], consumer: str) -> None:
    """A worker process: take and apply until the queue has nothing left to take."""
    queue = SqliteDeliveryQueue(Path(path))
    idle = 0
    while idle < 20:
        taken = queue.take(consumer, 60)
        if taken is None:
            idle += 1
            continue
        idle = 0
        applied.put(taken.delivery_id)
        queue.done(taken.delivery_id, "handled")


def test_two_processes_on_one_file_never_lease_a_delivery_twice(tmp_path: Path) -> None:
    # SPEC GH8: two processes taking from one file apply each delivery exactly once
    path = tmp_path / "queue.sqlite3"
    queue = SqliteDeliveryQueue(path)
    names = [f"d{index}" for index in range(200)]
    for index, name in enumerate(names):
        queue.put(item(name, f"o/r{index % 7}"))
    context = multiprocessing.get_context("spawn")
    applied: multiprocessing.Queue[str] = context.Queue()
    workers = [context.Process(target=_work, args=(str(path), applied, f"p{n}")) for n in range(2)]
    for worker in workers:
        worker.start()
    seen = [applied.get(timeout=30) for _ in names]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    assert sorted(seen) == sorted(names)  # each once: no delivery leased by both
    assert queue.counts()[QueueState.APPLIED] == len(names)
