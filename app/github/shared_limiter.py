"""GitHub's content-creation limit shared by every replica through Redis (issue 27, SPEC GH8).

GitHub counts 80 content-creating requests a minute and 500 an hour per App installation, whatever process sends
them (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
two replicas with an in-process window each could send 160 a minute. ``RedisContentLimiter`` keeps both windows
in Redis, one sorted set per installation and window, checked and filled by one Lua script so that no two
replicas can both take the last place. A pause GitHub asked for (a secondary-limit 403/429 with ``retry-after``)
is a key with PX: every replica waits for it, not only the one that was told.

When Redis cannot be reached (refused, timeout, at start or later) the limiter never fails a delivery for it: it
falls back to an in-process ``ContentLimiter`` at the quota divided by the replica count, logs one line when it
falls back and one when Redis answers again, and ``status()`` says which is in use (for ``/healthz``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from app.github.throttle import (
    CONTENT_PER_HOUR,
    CONTENT_PER_MINUTE,
    HOUR_HELD_S,
    MAX_WAIT_S,
    MINUTE_HELD_S,
    ContentLimiter,
    ContentQuotaFull,
)

RETRY_S = 5.0  # how long a replica limits in-process before it asks an unreachable Redis again
TIMEOUT_S = 0.5  # a Redis that answers slower than this is taken as unreachable: a delivery never waits on it
log = logging.getLogger("interlock.limiter")
REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError)


class RedisLink:
    """One process's view of whether its Redis answers, shared by the limiters of every installation, so that a
    Redis going down is one log line (and one back again), not one per installation."""

    def __init__(self, client: redis.Redis, replicas: int = 1) -> None:
        self.client, self.replicas = client, replicas
        self.down = False
        self.retry_at = 0.0
        self.lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, replicas: int = 1) -> RedisLink:
        """One client (one connection pool) for the whole process, with short timeouts."""
        client = redis.Redis.from_url(  # one retry at once: a pooled connection a restarted Redis dropped
            url, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S, retry=Retry(NoBackoff(), 1)
        )
        return cls(client, replicas)

    def skipped(self) -> bool:
        """Whether Redis is taken as down for now (not asked again before ``RETRY_S``)."""
        return self.down and time.monotonic() < self.retry_at

    def fell_back(self, error: Exception, per_minute: int) -> None:
        with self.lock:
            self.retry_at = time.monotonic() + RETRY_S
            if not self.down:
                self.down = True
                log.warning(
                    "redis unreachable (%s): limiting in-process at %d/min (quota / %d replicas)",
                    type(error).__name__,
                    per_minute,
                    self.replicas,
                )

    def back(self) -> None:
        with self.lock:
            if self.down:
                self.down = False
                log.warning("redis reachable again: the content limit is shared by every replica")


HELD_MS = (round(MINUTE_HELD_S * 1000), round(HOUR_HELD_S * 1000))

# KEYS: minute zset, hour zset, pause key. ARGV: now ms, member, per minute, per hour, how long a place is held
# in the minute's window and in the hour's, ms (``throttle.MINUTE_HELD_S``, ``HOUR_HELD_S``).
# Returns 0 when the place is taken, else the milliseconds to wait before asking again.
_TAKE = """
local now = tonumber(ARGV[1])
local minute, hour = tonumber(ARGV[5]), tonumber(ARGV[6])
local pause = redis.call('PTTL', KEYS[3])
if pause > 0 then return pause end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - minute)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - hour)
local wait = 0
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  wait = math.max(wait, tonumber(oldest[2]) + minute - now)
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  wait = math.max(wait, tonumber(oldest[2]) + hour - now)
end
if wait > 0 then return math.max(wait, 1) end
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], minute + 1000)
redis.call('PEXPIRE', KEYS[2], hour + 1000)
return 0
"""


# KEYS: pause key. ARGV: ms. A pause is only ever lengthened: a shorter ``retry-after`` told to one replica
# never ends a longer one another replica was told, as the in-process limiter keeps the longer too.
_PAUSE = """
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return 1
"""


class RedisContentLimiter:
    """``ContentLimiter``'s interface (``acquire``, ``ContentQuotaFull`` past ``max_wait_s``) for one
    installation, shared through Redis; ``pause(seconds)`` records GitHub's back-off for every replica. The
    server's clock (``TIME``) is used, so replicas with skewed clocks still share one window. ``link``: the
    process's shared view of Redis (one is made for ``client`` when none is given)."""

    def __init__(
        self,
        client: redis.Redis,
        installation_id: int | str,
        replicas: int = 1,
        prefix: str = "interlock",
        max_wait_s: float = MAX_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
        per_minute: int = CONTENT_PER_MINUTE,
        per_hour: int = CONTENT_PER_HOUR,
        link: RedisLink | None = None,
    ) -> None:
        self.client, self.max_wait_s, self.sleep = client, max_wait_s, sleep
        self.per_minute, self.per_hour = per_minute, per_hour
        base = f"{prefix}:limit:{installation_id}"
        self.keys = [f"{base}:minute", f"{base}:hour", f"{base}:pause"]
        self.script = client.register_script(_TAKE)
        self.pausing = client.register_script(_PAUSE)
        self.fallback = ContentLimiter(
            per_minute=max(per_minute // replicas, 1), max_wait_s=max_wait_s, per_hour=max(per_hour // replicas, 1)
        )
        self.link = link or RedisLink(client, replicas)

    def acquire(self) -> None:
        began = time.monotonic()
        while True:
            if self.link.skipped():
                self.fallback.acquire()  # Redis is not asked again before RETRY_S: a dead server costs no delay
                return
            try:
                wait_ms = self._take()
            except REDIS_ERRORS as error:
                self.link.fell_back(error, self.fallback.per_minute)
                self.fallback.acquire()
                return
            self.link.back()
            if wait_ms == 0:
                return
            wait = wait_ms / 1000
            if wait > self.max_wait_s - (time.monotonic() - began):
                raise ContentQuotaFull(wait, "the installation's shared quota is full, or GitHub asked to wait")
            self.sleep(wait)

    def pause(self, seconds: float) -> None:
        """Every replica waits ``seconds`` before its next content-creating request to this installation; with
        Redis unreachable, this replica at least."""
        if seconds <= 0:
            return
        self.fallback.pause(seconds)
        if self.link.skipped():
            return
        try:
            self.pausing(keys=[self.keys[2]], args=[max(int(seconds * 1000), 1)])
        except REDIS_ERRORS as error:
            self.link.fell_back(error, self.fallback.per_minute)

    def status(self) -> str:
        """What ``/healthz`` shows: which limiter is in use."""
        if self.link.down:
            return f"in-process (redis unreachable): {self.fallback.per_minute}/min"
        return "redis"

    def _take(self) -> int:
        seconds, micros = self.client.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        args: list[str | int] = [now_ms, uuid.uuid4().hex, self.per_minute, self.per_hour, *HELD_MS]
        return int(self.script(keys=self.keys, args=args))
