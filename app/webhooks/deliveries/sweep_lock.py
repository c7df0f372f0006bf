"""What lets several replicas share one sweep (SPEC GH8): a lock so that one replica sweeps per interval, and a
ledger of the redeliveries asked for, so that none is asked twice within the lookback and the hourly bound
(``INTERLOCK_SWEEP_MAX_PER_HOUR`` in any rolling hour) counts the whole fleet's.

Each has two implementations: in this process (one replica, the default) and in Redis (``INTERLOCK_REDIS_URL``).
The Redis lock is the single-instance pattern Redis documents: ``SET key token NX PX ttl`` to take it, and a
Lua compare-and-delete to release it, so that a replica whose lock lapsed never deletes another's.
https://redis.io/docs/latest/develop/use/patterns/distributed-locks/ and https://redis.io/docs/latest/commands/set/
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the redis package is needed only when a Redis URL is configured
    from redis import Redis

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""
CLAIM = """
if redis.call('zscore', KEYS[1], ARGV[1]) then
    return 'asked'
end
if redis.call('zcount', KEYS[1], ARGV[3], '+inf') >= tonumber(ARGV[4]) then
    return 'full'
end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
return 'claimed'
"""
PREFIX = "interlock:sweep"
HOUR_S = 3600.0


class SweepLock(Protocol):
    def acquire(self, ttl_s: float) -> str | None:
        """A token when this caller now holds the lock for ``ttl_s`` seconds; None when another holds it."""
        ...

    def release(self, token: str) -> None:
        """Let go, if ``token`` still holds it (a lapsed lock another caller took is left alone)."""
        ...


class Claim(StrEnum):
    """What the ledger answered a sweep that would ask GitHub to redeliver a delivery."""

    CLAIMED = "claimed"  # remembered now: ask GitHub
    ASKED = "asked"  # asked for already within the lookback: not again
    FULL = "full"  # the rolling hour's bound is reached: not now


class SweepLedger(Protocol):
    """The deliveries the sweep asked GitHub to redeliver, by guid, with when (epoch seconds)."""

    def claim(self, guid: str, at: float, per_hour: int) -> Claim:
        """Remember ``guid`` as asked at ``at``, unless it was already or ``per_hour`` were asked in the hour
        before ``at``; check and remember are one step, so two replicas never both claim one delivery."""
        ...

    def unclaim(self, guid: str) -> None:
        """Forget ``guid``: GitHub refused the ask, so the next sweep may ask again."""
        ...

    def asked_since(self, since: float) -> int: ...

    def forget_before(self, before: float) -> None: ...


class ProcessLock:
    """One process's lock, with the same lapse as the Redis one (so the two behave alike in tests)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.mutex = threading.Lock()
        self.holder: tuple[str, float] | None = None  # token, when it lapses

    def acquire(self, ttl_s: float) -> str | None:
        with self.mutex:
            now = self.clock()
            if self.holder is not None and self.holder[1] > now:
                return None
            token = secrets.token_hex(8)
            self.holder = (token, now + ttl_s)
            return token

    def release(self, token: str) -> None:
        with self.mutex:
            if self.holder is not None and self.holder[0] == token:
                self.holder = None


class ProcessLedger:
    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.times: dict[str, float] = {}

    def claim(self, guid: str, at: float, per_hour: int) -> Claim:
        with self.mutex:
            if guid in self.times:
                return Claim.ASKED
            if sum(1 for when in self.times.values() if when > at - HOUR_S) >= per_hour:
                return Claim.FULL
            self.times[guid] = at
            return Claim.CLAIMED

    def unclaim(self, guid: str) -> None:
        with self.mutex:
            self.times.pop(guid, None)

    def asked_since(self, since: float) -> int:
        with self.mutex:
            return sum(1 for at in self.times.values() if at >= since)

    def forget_before(self, before: float) -> None:
        with self.mutex:
            self.times = {guid: at for guid, at in self.times.items() if at >= before}


class RedisLock:
    def __init__(self, client: Redis, key: str = f"{PREFIX}:lock") -> None:
        self.client = client
        self.key = key
        self.script = client.register_script(RELEASE)

    def acquire(self, ttl_s: float) -> str | None:
        token = secrets.token_hex(8)
        taken = self.client.set(self.key, token, nx=True, px=max(int(ttl_s * 1000), 1))
        return token if taken else None

    def release(self, token: str) -> None:
        self.script(keys=[self.key], args=[token])


class RedisLedger:
    """A sorted set: each guid asked for, scored by when; shared by every replica. A claim is one Lua script,
    so that its check and its write are atomic (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/)."""

    def __init__(self, client: Redis, key: str = f"{PREFIX}:asked") -> None:
        self.client = client
        self.key = key
        self.script = client.register_script(CLAIM)

    def claim(self, guid: str, at: float, per_hour: int) -> Claim:
        answer = self.script(keys=[self.key], args=[guid, repr(at), f"({at - HOUR_S!r}", per_hour])
        return Claim(answer.decode() if isinstance(answer, bytes) else str(answer))

    def unclaim(self, guid: str) -> None:
        self.client.zrem(self.key, guid)

    def asked_since(self, since: float) -> int:
        return int(self.client.zcount(self.key, since, "+inf"))

    def forget_before(self, before: float) -> None:
        self.client.zremrangebyscore(self.key, "-inf", f"({before}")


def redis_pieces(url: str) -> tuple[RedisLock, RedisLedger]:
    """The lock and the ledger in the Redis at ``url``, sharing one client."""
    from redis import Redis

    client = Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    return RedisLock(client), RedisLedger(client)
