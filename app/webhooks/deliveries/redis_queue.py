"""The shared delivery queue: Redis, when several replicas serve one App (``INTERLOCK_REDIS_URL``; issue 27, SPEC GH8).

Why not Redis Streams with a consumer group, as the issue suggests: a stream hands the next entry to whichever
consumer asks, so two consumers would apply two deliveries of one repository at once, and ``XAUTOCLAIM``
hands a lapsed entry over without regard to what waits behind it. The real requirement is a per-key order with
one lease per key across replicas; keeping it on top of a stream means a second structure anyway. So the queue is
plain Redis structures, each change made by one Lua script (Redis runs a script whole, with nothing between its
commands: https://redis.io/docs/latest/develop/interact/programmability/eval-intro/), which is the SQLite
queue's ``BEGIN IMMEDIATE`` in Redis terms:

- ``P:d:<id>``: a hash per delivery (event, key, state, seq, attempts, outcome, lease_until, …), and ``P:b:<id>``
  its body while it is open (apart, so that the hash keeps Redis's compact encoding of small hashes);
- ``P:k:<key>``: a list per ordering key (repository) of its open deliveries, oldest first; only its head is
  ever leased, so a repository never has two at once and a retried delivery stays first;
- ``P:ready``: the keys whose head may be taken now, scored by the head's sequence number, so ``take`` leases the
  oldest takeable delivery with ``ZRANGE 0 0``;
- ``P:timed``: the keys whose head is leased or backing off, scored by when that ends; ``take`` first moves the
  keys due to ``P:ready``: a lease its worker did not end lapses there, and another replica takes the delivery;
- ``P:s:waiting``, ``P:s:leased``, ``P:s:failed`` (sets) and ``P:applied`` (scored by when it was applied) for
  ``counts`` and the retention.

Time is the Redis server's (``TIME`` in the script), so replicas with skewed clocks agree on when a lease lapses;
tests inject a clock instead. What is kept: a delivery's body until it ends (applied or failed: the body is then
dropped, as nothing reads it again, and an applied record takes about 500 bytes of Redis's memory), failed records
for good, as the SQLite queue keeps them (the sweep and a person read them), applied records for
``keep_applied_s`` (7 days, as the SQLite queue): older ones are deleted, 100 at most at a time, as new ones are
applied, so Redis does not grow for ever (10,000 deliveries a day: about 35 MB).
Acknowledged deliveries survive a restart of Redis only if it persists: run it with ``appendonly yes``
(``compose.yaml`` does). The scripts build key names from the prefix, so the queue needs one Redis server (or a
primary with replicas), not Redis Cluster.

A connection refused or timed out, or a write Redis refuses (``maxmemory``, a read-only replica), raises
``QueueUnavailable`` (``app/webhooks/deliveries/durable.py``). The client waits 1 s for a connection and 2 s for an
answer, and tries once more, so a ``put`` fails well within GitHub's 10 s and the service can answer 503.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import OutOfMemoryError, ReadOnlyError
from redis.retry import Retry

from app.webhooks.deliveries.durable import DeliveryRecord, QueuedDelivery, QueueState, QueueUnavailable
from app.webhooks.deliveries.sqlite_queue import KEEP_APPLIED_S, dead_here

PREFIX = "{interlock}:queue"
CONNECT_TIMEOUT_S = 1.0
ANSWER_TIMEOUT_S = 2.0

# ARGV[1] is the prefix, ARGV[2] the time ('' for the server's clock); the rest is each script's own.
PRELUDE = """
local P = ARGV[1]
local function now_of(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function set_state(id, from, to, now)
  if from == 'applied' then redis.call('ZREM', P .. ':applied', id)
  elseif from then redis.call('SREM', P .. ':s:' .. from, id) end
  if to == 'applied' then redis.call('ZADD', P .. ':applied', now, id)
  else redis.call('SADD', P .. ':s:' .. to, id) end
  redis.call('HSET', P .. ':d:' .. id, 'state', to)
end
local function reschedule(key, now)
  redis.call('ZREM', P .. ':ready', key)
  redis.call('ZREM', P .. ':timed', key)
  local head = redis.call('LINDEX', P .. ':k:' .. key, 0)
  if not head then return end
  local f = redis.call('HMGET', P .. ':d:' .. head, 'state', 'seq', 'not_before', 'lease_until')
  local at = tonumber(f[3])
  if f[1] == 'leased' then at = tonumber(f[4]) end
  if at > now then redis.call('ZADD', P .. ':timed', at, key)
  else redis.call('ZADD', P .. ':ready', f[2], key) end
end
"""

# ARGV[3..6]: id, event, key, body. A failed delivery is queued again, last in its key's order.
PUT = """
local id = ARGV[3]
local d = P .. ':d:' .. id
local state = redis.call('HGET', d, 'state')
if state and state ~= 'failed' then return 0 end
local now = now_of(ARGV[2])
local key = ARGV[5]
if state then key = redis.call('HGET', d, 'key')
else redis.call('HSET', d, 'event', ARGV[4], 'key', key, 'received_at', now) end
local seq = redis.call('INCR', P .. ':seq')
redis.call('SET', P .. ':b:' .. id, ARGV[6])
redis.call('HSET', d, 'seq', seq, 'attempts', 0, 'outcome', '', 'last_error', '',
  'not_before', 0, 'lease_until', 0, 'consumer', '', 'ended_at', 0)
set_state(id, state, 'waiting', now)
if redis.call('RPUSH', P .. ':k:' .. key, id) == 1 then reschedule(key, now) end
return 1
"""

# ARGV[3..4]: consumer, visibility seconds. Returns {id, event, key, body, attempts before} or nil.
TAKE = """
local now = now_of(ARGV[2])
for _, due in ipairs(redis.call('ZRANGEBYSCORE', P .. ':timed', '-inf', now)) do reschedule(due, now) end
local top = redis.call('ZRANGE', P .. ':ready', 0, 0)
if #top == 0 then return false end
local key = top[1]
local id = redis.call('LINDEX', P .. ':k:' .. key, 0)
if not id then redis.call('ZREM', P .. ':ready', key) return false end
local d = P .. ':d:' .. id
local f = redis.call('HMGET', d, 'state', 'event', 'attempts')
local lease_end = now + tonumber(ARGV[4])
redis.call('HSET', d, 'attempts', tonumber(f[3]) + 1, 'lease_until', lease_end, 'consumer', ARGV[3])
if f[1] ~= 'leased' then set_state(id, f[1], 'leased', now) end
redis.call('ZREM', P .. ':ready', key)
redis.call('ZADD', P .. ':timed', lease_end, key)
return {id, f[2], key, redis.call('GET', P .. ':b:' .. id) or '', tonumber(f[3])}
"""

# ARGV[3..6]: id, 'applied' or 'failed', outcome, seconds applied records are kept.
END = """
local id, to = ARGV[3], ARGV[4]
local d = P .. ':d:' .. id
local state = redis.call('HGET', d, 'state')
if not (state == 'leased' or (to == 'failed' and state == 'waiting')) then return 0 end
local now = now_of(ARGV[2])
redis.call('HSET', d, 'outcome', ARGV[5], 'ended_at', now, 'lease_until', 0)
redis.call('DEL', P .. ':b:' .. id)
set_state(id, state, to, now)
local key = redis.call('HGET', d, 'key')
redis.call('LREM', P .. ':k:' .. key, 1, id)
reschedule(key, now)
if to == 'applied' then
  local before = '(' .. string.format('%.6f', now - tonumber(ARGV[6]))
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', P .. ':applied', '-inf', before, 'LIMIT', 0, 100)) do
    redis.call('DEL', P .. ':d:' .. old)
    redis.call('ZREM', P .. ':applied', old)
  end
end
return 1
"""

# ARGV[3..6]: id, error, delay seconds, 1 if this take counts as an attempt (else it is given back). The
# delivery stays the head of its key's list: first in its order.
RETRY = """
local id = ARGV[3]
local d = P .. ':d:' .. id
if redis.call('HGET', d, 'state') ~= 'leased' then return 0 end
local now = now_of(ARGV[2])
redis.call('HSET', d, 'last_error', ARGV[4], 'not_before', now + tonumber(ARGV[5]), 'lease_until', 0)
if ARGV[6] ~= '1' then redis.call('HINCRBY', d, 'attempts', -1) end
set_state(id, 'leased', 'waiting', now)
reschedule(redis.call('HGET', d, 'key'), now)
return 1
"""

# ARGV[3..4]: id, the consumer that must still hold it. Its lease ends now: the delivery may be taken at once.
LAPSE = """
local d = P .. ':d:' .. ARGV[3]
if redis.call('HGET', d, 'state') ~= 'leased' or redis.call('HGET', d, 'consumer') ~= ARGV[4] then return 0 end
redis.call('HSET', d, 'lease_until', 0)
reschedule(redis.call('HGET', d, 'key'), now_of(ARGV[2]))
return 1
"""

RECORD_FIELDS = ("event", "key", "state", "attempts", "outcome", "received_at")


@contextmanager
def reachable() -> Iterator[None]:
    """Redis's connection errors, and its refusals to write (``maxmemory`` reached, a replica after a failover),
    as the queue's own, which the service and the workers know. A script refused writes nothing: Redis checks
    at its first write, and lets a script that has begun writing finish."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as error:
        raise QueueUnavailable(f"redis unreachable ({type(error).__name__}: {error})") from error
    except (OutOfMemoryError, ReadOnlyError) as error:
        raise QueueUnavailable(f"redis refuses to write ({type(error).__name__}: {error})") from error


def text(value: bytes | str | None) -> str:
    """A value as Redis returned it (bytes: the client decodes nothing, as bodies are bytes), as text."""
    return value.decode() if isinstance(value, bytes) else (value or "")


def client_for(url: str) -> redis.Redis:
    """A client that gives up soon enough for a 503 within GitHub's 10 s (see the module's docstring)."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=ANSWER_TIMEOUT_S,
        retry=Retry(ExponentialBackoff(cap=0.25, base=0.05), 1),
    )


class RedisDeliveryQueue:
    """The ``DeliveryQueue`` contract (``app/webhooks/deliveries/durable.py``) in one Redis, shared by replicas."""

    backend = "redis"

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = PREFIX,
        clock: Callable[[], float] | None = None,
        keep_applied_s: float = KEEP_APPLIED_S,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.clock = clock  # None: the Redis server's clock, which every replica shares
        self.keep_applied_s = keep_applied_s
        self.scripts = {
            name: client.register_script(PRELUDE + body)
            for name, body in (("put", PUT), ("take", TAKE), ("end", END), ("retry", RETRY), ("lapse", LAPSE))
        }

    @classmethod
    def from_url(cls, url: str) -> RedisDeliveryQueue:
        return cls(client_for(url))

    def _run(self, name: str, *args: str | bytes | float) -> Any:
        now = "" if self.clock is None else repr(self.clock())
        with reachable():
            return self.scripts[name](args=[self.prefix, now, *args])

    def ping(self) -> None:
        """Raise ``QueueUnavailable`` unless Redis answers."""
        with reachable():
            self.client.ping()

    def put(self, item: QueuedDelivery) -> bool:
        return bool(self._run("put", item.delivery_id, item.event, item.key, item.body))

    def take(self, consumer: str, visibility_s: float) -> QueuedDelivery | None:
        taken = self._run("take", consumer, visibility_s)
        if not taken:
            return None
        delivery_id, event, key, body, attempts = taken
        return QueuedDelivery(delivery_id.decode(), event.decode(), key.decode(), bytes(body), int(attempts))

    def done(self, delivery_id: str, outcome: str) -> None:
        self._run("end", delivery_id, QueueState.APPLIED.value, outcome, self.keep_applied_s)

    def fail(self, delivery_id: str, reason: str) -> None:
        self._run("end", delivery_id, QueueState.FAILED.value, reason, self.keep_applied_s)

    def retry(self, delivery_id: str, error: str, delay_s: float, counted: bool = True) -> None:
        self._run("retry", delivery_id, error, delay_s, int(counted))

    def lapse_dead_leases(self) -> int:
        """End at once the leases of this host's processes that are gone, as ``SqliteDeliveryQueue`` does, so a
        replica restarted on the same host applies them now; a lease of another host lapses by itself."""
        host = socket.gethostname()
        with reachable():
            leased = [text(raw) for raw in self.client.smembers(f"{self.prefix}:s:leased")]
            holders = [self.client.hget(f"{self.prefix}:d:{delivery_id}", "consumer") for delivery_id in leased]
        lapsed = 0
        for delivery_id, holder in zip(leased, holders, strict=True):
            consumer = text(holder)
            if dead_here(consumer, host):
                lapsed += int(self._run("lapse", delivery_id, consumer))
        return lapsed

    def record(self, delivery_id: str) -> DeliveryRecord | None:
        with reachable():
            values = self.client.hmget(f"{self.prefix}:d:{delivery_id}", list(RECORD_FIELDS))
        event, key, state, attempts, outcome, received_at = (text(value) for value in values)
        if not state:
            return None
        count, received = int(attempts or 0), float(received_at or 0)
        return DeliveryRecord(delivery_id, event, key, QueueState(state), count, outcome, received)

    def counts(self) -> dict[QueueState, int]:
        with reachable():
            pipe = self.client.pipeline(transaction=True)  # MULTI: one moment's counts
            for state in (QueueState.WAITING, QueueState.LEASED, QueueState.FAILED):
                pipe.scard(f"{self.prefix}:s:{state.value}")
            pipe.zcard(f"{self.prefix}:applied")
            waiting, leased, failed, applied = pipe.execute()
        return {
            QueueState.WAITING: int(waiting),
            QueueState.LEASED: int(leased),
            QueueState.APPLIED: int(applied),
            QueueState.FAILED: int(failed),
        }
