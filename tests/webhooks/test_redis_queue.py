"""The Redis delivery queue across processes: what the contract suite (test_delivery_queue.py) cannot show in one
process (SPEC GH8, issue 27). A real redis-server (tests/redis_server.py), real processes, the server's clock."""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time
import uuid
from collections import Counter
from multiprocessing.synchronize import Barrier

import pytest
import redis

from app.webhooks.deliveries.durable import QueuedDelivery, QueueState, QueueUnavailable
from app.webhooks.deliveries.redis_queue import RedisDeliveryQueue
from tests.redis_server import free_port

SPAWN = multiprocessing.get_context("spawn")
SETTLE_S = 60.0  # only keeps a broken test from hanging


def item(delivery_id: str, key: str = "o/r") -> QueuedDelivery:
    return QueuedDelivery(delivery_id, "issues", key, delivery_id.encode())


def fresh(url: str) -> RedisDeliveryQueue:
    return RedisDeliveryQueue(redis.Redis.from_url(url), prefix=f"test:{uuid.uuid4().hex}")


def _consume(url: str, prefix: str, consumer: str, start: Barrier) -> None:
    """A consumer process: take, mark the key held (SET NX: a second holder finds it set), record the order,
    release, done; until nothing is left to take."""
    queue = RedisDeliveryQueue(redis.Redis.from_url(url), prefix=prefix)
    client = redis.Redis.from_url(url)
    start.wait(timeout=30)
    idle = 0
    while idle < 100:
        taken = queue.take(consumer, 30)
        if taken is None:
            idle += 1
            time.sleep(0.005)
            continue
        idle = 0
        if not client.set(f"{prefix}:t:holder:{taken.key}", consumer, nx=True):
            client.rpush(f"{prefix}:t:violations", f"{taken.delivery_id} while {taken.key} was held")
        client.rpush(f"{prefix}:t:order:{taken.key}", taken.delivery_id)
        client.hincrby(f"{prefix}:t:by", consumer, 1)
        time.sleep(0.001)
        client.delete(f"{prefix}:t:holder:{taken.key}")
        queue.done(taken.delivery_id, "handled")


def test_two_processes_never_hold_one_key_at_once_and_keep_its_order(redis_url: str) -> None:
    # SPEC GH8: across replicas, a repository's deliveries are applied one at a time, in the order acknowledged
    queue = fresh(redis_url)
    keys = [f"o/r{n}" for n in range(5)]
    sent: dict[str, list[str]] = {key: [] for key in keys}
    for index in range(300):
        key = keys[index % len(keys)]
        sent[key].append(f"d{index}")
        assert queue.put(item(f"d{index}", key)) is True
    start = SPAWN.Barrier(3)
    workers = [SPAWN.Process(target=_consume, args=(redis_url, queue.prefix, f"p{n}", start)) for n in range(2)]
    for worker in workers:
        worker.start()
    start.wait(timeout=60)  # both take from the first delivery on, not one after the other has finished
    for worker in workers:
        worker.join(timeout=SETTLE_S)
        assert worker.exitcode == 0
    client = redis.Redis.from_url(redis_url)
    assert client.lrange(f"{queue.prefix}:t:violations", 0, -1) == []
    for key in keys:
        assert [raw.decode() for raw in client.lrange(f"{queue.prefix}:t:order:{key}", 0, -1)] == sent[key]
    by = {name.decode(): int(count) for name, count in client.hgetall(f"{queue.prefix}:t:by").items()}
    assert set(by) == {"p0", "p1"} and sum(by.values()) == 300  # both took deliveries; each once
    assert queue.counts() == {**dict.fromkeys(QueueState, 0), QueueState.APPLIED: 300}


def _take_and_die(url: str, prefix: str, consumer: str, visibility_s: float) -> None:
    """Lease one delivery, then die as ``kill -9`` kills: no ``done``, no cleanup."""
    queue = RedisDeliveryQueue(redis.Redis.from_url(url), prefix=prefix)
    assert queue.take(consumer, visibility_s) is not None
    os.kill(os.getpid(), signal.SIGKILL)


def die_holding_a_lease(url: str, prefix: str, consumer: str, visibility_s: float) -> None:
    process = SPAWN.Process(target=_take_and_die, args=(url, prefix, consumer, visibility_s))
    process.start()
    process.join(timeout=SETTLE_S)
    assert process.exitcode == -signal.SIGKILL


def server_time(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return float(seconds) + float(micros) / 1e6


def test_a_consumer_killed_mid_lease_leaves_its_delivery_to_another_after_the_visibility_timeout(
    redis_url: str,
) -> None:
    # SPEC GH8: a replica killed mid-delivery loses nothing; another takes it once the lease lapsed, not before
    queue = fresh(redis_url)
    queue.put(item("a"))
    queue.put(item("b"))
    die_holding_a_lease(redis_url, queue.prefix, "elsewhere:1:worker-0", 5.0)
    client = queue.client
    lease_end = float(client.hget(f"{queue.prefix}:d:a", "lease_until") or 0)
    assert server_time(client) < lease_end, "the machine took longer than the lease to get here"
    assert queue.take("survivor", 30) is None  # "a" is still leased by the dead one, and "b" waits behind it
    give_up = time.monotonic() + SETTLE_S
    while (taken := queue.take("survivor", 30)) is None:
        assert time.monotonic() < give_up
        time.sleep(0.1)
    assert server_time(client) >= lease_end
    assert (taken.delivery_id, taken.attempts, taken.body) == ("a", 1, b"a")
    assert queue.take("survivor", 30) is None  # "b" still after "a"
    queue.done("a", "handled")
    second = queue.take("survivor", 30)
    assert second is not None and second.delivery_id == "b"


def test_a_restarted_replica_lapses_the_leases_of_its_hosts_dead_processes_at_once(redis_url: str) -> None:
    # SPEC GH8: as with the SQLite queue, a replica restarted on the same host need not wait out the lease
    queue = fresh(redis_url)
    for name, key in (("a", "o/a"), ("b", "o/b")):
        queue.put(item(name, key))
    host = socket.gethostname()
    die_holding_a_lease(redis_url, queue.prefix, f"{host}:999999999:worker-0", 600.0)  # a pid that is gone
    alive = queue.take(f"{host}:{os.getpid()}:worker-0", 600.0)  # this process's own lease: kept
    assert alive is not None and alive.delivery_id == "b"
    assert queue.lapse_dead_leases() == 1
    again = queue.take("restarted", 600.0)
    assert again is not None and (again.delivery_id, again.attempts) == ("a", 1)
    assert queue.take("restarted", 600.0) is None


def test_an_ended_deliverys_body_is_dropped(redis_url: str) -> None:
    # applied and failed records are kept without the body: nothing reads it again, and Redis stays small
    queue = fresh(redis_url)
    queue.put(QueuedDelivery("a", "issues", "o/r", b"x" * 10_000))
    assert queue.client.exists(f"{queue.prefix}:b:a") == 1
    taken = queue.take("w", 60)
    assert taken is not None and taken.body == b"x" * 10_000
    queue.done("a", "handled")
    assert queue.client.exists(f"{queue.prefix}:b:a") == 0
    record = queue.record("a")
    assert record is not None and record.state is QueueState.APPLIED


def test_an_unreachable_redis_raises_queue_unavailable() -> None:
    # SPEC GH8: the service tells an unreachable queue from a refused delivery (503, not a lost delivery)
    queue = RedisDeliveryQueue.from_url(f"redis://127.0.0.1:{free_port()}/0")
    calls = [
        queue.ping,
        lambda: queue.put(item("a")),
        lambda: queue.take("w", 60),
        lambda: queue.done("a", "handled"),
        queue.counts,
        lambda: queue.record("a"),
    ]
    for call in calls:
        with pytest.raises(QueueUnavailable, match="redis unreachable"):
            call()


def test_records_count_each_state_once_after_many_moves(redis_url: str) -> None:
    # the state sets stay in step with the records: counts is what record says of each
    queue = fresh(redis_url)
    names = [f"d{n}" for n in range(30)]
    for index, name in enumerate(names):
        queue.put(item(name, f"o/r{index % 3}"))
    while (taken := queue.take("w", 60)) is not None:
        match int(taken.delivery_id[1:]) % 3:
            case 0:
                queue.done(taken.delivery_id, "handled")
            case 1:
                queue.fail(taken.delivery_id, "refused")
            case _ if taken.attempts == 0:
                queue.retry(taken.delivery_id, "GitHub answered 502", 0)
            case _:
                queue.done(taken.delivery_id, "handled on its second attempt")
    states = Counter(record.state for name in names if (record := queue.record(name)) is not None)
    assert queue.counts() == {state: states.get(state, 0) for state in QueueState}
    assert queue.counts()[QueueState.FAILED] == 10 and queue.counts()[QueueState.APPLIED] == 20
