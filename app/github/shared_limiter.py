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

from app.github.throttle import CONTENT_PER_MINUTE, MAX_WAIT_S, ContentLimiter, ContentQuotaFull

CONTENT_PER_HOUR = 500
RETRY_S = 5.0  # how long a replica limits in-process before it asks an unreachable Redis again
log = logging.getLogger("interlock.limiter")

# KEYS: minute zset, hour zset, pause key. ARGV: now ms, member, per minute, per hour.
# Returns 0 when the place is taken, else the milliseconds to wait before asking again.
_TAKE = """
local now = tonumber(ARGV[1])
local pause = redis.call('PTTL', KEYS[3])
if pause > 0 then return pause end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 3600000)
local wait = 0
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  wait = math.max(wait, tonumber(oldest[2]) + 60000 - now)
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  wait = math.max(wait, tonumber(oldest[2]) + 3600000 - now)
end
if wait > 0 then return math.max(wait, 1) end
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], 61000)
redis.call('PEXPIRE', KEYS[2], 3601000)
return 0
"""


class RedisContentLimiter:
    """``ContentLimiter``'s interface (``acquire``, ``ContentQuotaFull`` past ``max_wait_s``) for one
    installation, shared through Redis; ``pause(seconds)`` records GitHub's back-off for every replica. The
    server's clock (``TIME``) is used, so replicas with skewed clocks still share one window."""

    def __init__(
        self,
        client: redis.Redis,
        installation_id: int,
        replicas: int = 1,
        prefix: str = "interlock",
        max_wait_s: float = MAX_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client, self.max_wait_s, self.sleep = client, max_wait_s, sleep
        base = f"{prefix}:limit:{installation_id}"
        self.keys = [f"{base}:minute", f"{base}:hour", f"{base}:pause"]
        self.script = client.register_script(_TAKE)
        self.fallback = ContentLimiter(per_minute=max(CONTENT_PER_MINUTE // replicas, 1), max_wait_s=max_wait_s)
        self.replicas = replicas
        self.down = False
        self.retry_at = 0.0
        self.lock = threading.Lock()

    def acquire(self) -> None:
        began = time.monotonic()
        while True:
            if self.down and time.monotonic() < self.retry_at:
                self.fallback.acquire()  # Redis is not asked again before RETRY_S: a dead server costs no delay
                return
            try:
                wait_ms = self._take()
            except (redis.ConnectionError, redis.TimeoutError) as error:
                self._fell_back(error)
                self.fallback.acquire()
                return
            self._back()
            if wait_ms == 0:
                return
            wait = wait_ms / 1000
            if wait > self.max_wait_s - (time.monotonic() - began):
                raise ContentQuotaFull(wait)
            self.sleep(wait)

    def pause(self, seconds: float) -> None:
        """Every replica waits ``seconds`` before its next content-creating request to this installation."""
        if seconds <= 0:
            return
        try:
            self.client.set(self.keys[2], "1", px=max(int(seconds * 1000), 1))
        except (redis.ConnectionError, redis.TimeoutError) as error:
            self._fell_back(error)

    def status(self) -> str:
        """What ``/healthz`` shows: which limiter is in use."""
        if self.down:
            return f"in-process (redis unreachable): {self.fallback.per_minute}/min"
        return "redis"

    def _take(self) -> int:
        seconds, micros = self.client.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return int(self.script(keys=self.keys, args=[now_ms, uuid.uuid4().hex, CONTENT_PER_MINUTE, CONTENT_PER_HOUR]))

    def _fell_back(self, error: Exception) -> None:
        with self.lock:
            self.retry_at = time.monotonic() + RETRY_S
            if not self.down:
                self.down = True
                log.warning(
                    "redis unreachable (%s): limiting in-process at %d/min (quota / %d replicas)",
                    type(error).__name__,
                    self.fallback.per_minute,
                    self.replicas,
                )

    def _back(self) -> None:
        with self.lock:
            if self.down:
                self.down = False
                log.warning("redis reachable again: the content limit is shared by every replica")
