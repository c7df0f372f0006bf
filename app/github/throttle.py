"""GitHub's secondary rate limits, kept and waited for within bounds (issue 16).

GitHub allows an App at most 80 content-creating requests a minute and 500 an hour, and answers 403 or 429 with
``retry-after`` (or ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``) when it is asked too much.
https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit

Two things here, both bounded by ``MAX_WAIT_S`` so that a webhook delivery ends within the service's deadline
(``app/webhooks/service.py``, 8 s, itself under GitHub's 10 s):

- ``ContentLimiter``: two sliding windows per installation — never more than 80 content-creating requests (every
  REST write and every GraphQL mutation) in any 60 seconds, nor 500 in any hour. A request that would be the 81st
  (or the 501st) waits for the oldest to leave the window if that is within the bound, else fails at once with
  ``ContentQuotaFull``: the attempt fails cleanly, nothing half-applied, and the delivery queue takes it again
  after its back-off. ``pause`` holds every request for as long as GitHub asked. One process keeps these in
  memory; replicas share them in Redis (``app/github/shared_limiter.py``): both are a ``Limiter``.
- ``BoundedRateLimitRetry``: githubkit's retry decision for a rate-limit answer, retried once when GitHub's wait
  is within the bound, and not at all when it is longer (a primary limit resets within the hour): the call fails
  as the limiter's does, instead of holding a worker thread for a minute past the delivery's deadline. A
  secondary-limit answer also pauses the installation's limiter, so that no other request (of any replica, with
  Redis) walks into the same wall: https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx
from githubkit.exception import GitHubException, RateLimitExceeded, SecondaryRateLimitExceeded
from githubkit.retry import RetryOption
from githubkit.throttling import BaseThrottler

from app.engine.errors import InterlockError

CONTENT_PER_MINUTE = 80  # GitHub's secondary limit on content-creating requests, per App installation
CONTENT_PER_HOUR = 500  # and its hourly one
WINDOW_S = 60.0
HOUR_S = 3600.0
# A request reaches GitHub a moment after it took its place, and not every one takes as long: places taken 80 in
# a minute can arrive 81 or 82 in one (measured by tests/bench/bench_scale.py on a loaded machine). Each place is
# held this much longer than its window, so that GitHub, which counts arrivals, never sees more than the quota
# while no request is delayed on its way by this much more than another.
TRANSIT_MARGIN_S = 2.0
MINUTE_HELD_S = WINDOW_S + TRANSIT_MARGIN_S
HOUR_HELD_S = HOUR_S + TRANSIT_MARGIN_S
MAX_WAIT_S = 5.0  # the longest a request waits for a limit: under the service's 8 s delivery deadline


class ContentQuotaFull(InterlockError):
    """A content-creating request would exceed the minute's quota for longer than a delivery may wait."""

    def __init__(self, wait_s: float, why: str = "") -> None:
        self.wait_s = wait_s
        why = why or f"{CONTENT_PER_MINUTE} content-creating requests were sent to GitHub in the last minute"
        super().__init__(f"{why}; the next may go in {wait_s:.1f}s, longer than a request waits ({MAX_WAIT_S:g}s)")


class Limiter(Protocol):
    """What a client's throttler needs of an installation's limiter: in memory (``ContentLimiter``) or shared by
    every replica in Redis (``app/github/shared_limiter.py``)."""

    def acquire(self) -> None: ...

    def pause(self, seconds: float) -> None: ...

    def status(self) -> str: ...


def creates_content(request: httpx.Request) -> bool:
    """Whether GitHub counts ``request`` against its content-creating limits: a REST write (token exchanges
    aside) or a GraphQL mutation; reads, and GraphQL queries, do not."""
    if request.method in ("GET", "HEAD") or request.url.path.endswith("/access_tokens"):
        return False
    if not request.url.path.endswith("/graphql"):
        return True
    try:
        query = json.loads(request.content or b"{}").get("query", "")
    except (ValueError, AttributeError):
        return True  # not a body we wrote: counted, to be safe
    return isinstance(query, str) and query.lstrip().startswith("mutation")


class ContentLimiter:
    """At most ``per_minute`` content-creating requests in any ``WINDOW_S`` seconds and ``per_hour`` in any
    ``HOUR_S``, for one installation, each place held ``TRANSIT_MARGIN_S`` longer. The clock and the sleep are
    injectable so that tests need not wait."""

    def __init__(
        self,
        per_minute: int = CONTENT_PER_MINUTE,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        max_wait_s: float = MAX_WAIT_S,
        per_hour: int = CONTENT_PER_HOUR,
    ) -> None:
        self.per_minute, self.per_hour = per_minute, per_hour
        self.clock, self.sleep = clock, sleep
        self.max_wait_s = max_wait_s
        self.sent: deque[float] = deque()  # the last minute's
        self.hour: deque[float] = deque()  # the last hour's
        self.paused_until = float("-inf")
        self.lock = threading.Lock()

    def acquire(self) -> None:
        """Take a place in both windows, waiting up to ``max_wait_s`` in all for one (the wait for the lock, behind
        a request that sleeps for its own place, included); ``ContentQuotaFull`` otherwise."""
        began = time.monotonic()
        if not self.lock.acquire(timeout=self.max_wait_s):
            raise ContentQuotaFull(self.max_wait_s)
        try:
            now = self._drop_old(self.clock())
            wait, why = self._wait(now)
            if wait > 0:
                if wait > self.max_wait_s - (time.monotonic() - began):
                    raise ContentQuotaFull(wait, why)
                self.sleep(wait)
                now = self._drop_old(max(self.clock(), now + wait))
            self.sent.append(now)
            self.hour.append(now)
        finally:
            self.lock.release()

    def pause(self, seconds: float) -> None:
        """No content-creating request for ``seconds``: GitHub asked this installation to wait."""
        with self.lock:
            self.paused_until = max(self.paused_until, self.clock() + seconds)

    def status(self) -> str:
        return "in-process"

    def _wait(self, now: float) -> tuple[float, str]:
        """How long until a place is free, and why (``""``: the minute's window)."""
        waits = [(0.0, "")]
        if len(self.sent) >= self.per_minute:
            waits.append((self.sent[0] + MINUTE_HELD_S - now, ""))
        if len(self.hour) >= self.per_hour:
            hour = f"{self.per_hour} content-creating requests in the last hour"
            waits.append((self.hour[0] + HOUR_HELD_S - now, hour))
        if self.paused_until > now:
            waits.append((self.paused_until - now, "GitHub asked to wait (a secondary rate limit)"))
        return max(waits, key=lambda wait: wait[0])

    def _drop_old(self, now: float) -> float:
        while self.sent and self.sent[0] <= now - MINUTE_HELD_S:
            self.sent.popleft()
        while self.hour and self.hour[0] <= now - HOUR_HELD_S:
            self.hour.popleft()
        return now


class ContentThrottler(BaseThrottler):
    """githubkit's throttling hook: every content-creating request of a client takes its place in the
    installation's ``ContentLimiter`` before it is sent."""

    def __init__(self, limiter: Limiter) -> None:
        self.limiter = limiter

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        if creates_content(request):
            self.limiter.acquire()
        yield

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        if creates_content(request):
            self.limiter.acquire()
        yield


class BoundedRateLimitRetry:
    """Retry a rate-limited request once, when GitHub's ``retry-after`` (or its reset) is at most ``max_wait_s``.
    A secondary limit (githubkit's reading of GitHub's answer: a ``retry-after``, or the "secondary rate limit"
    message) is also told to ``pause``: the installation's limiter, so every request to it waits that long."""

    def __init__(
        self, max_wait_s: float = MAX_WAIT_S, max_retry: int = 1, pause: Callable[[float], None] | None = None
    ) -> None:
        self.max_wait_s = max_wait_s
        self.max_retry = max_retry
        self.pause = pause

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        if not isinstance(exc, RateLimitExceeded):
            return RetryOption(False)
        wait = exc.retry_after if exc.retry_after is not None else timedelta(seconds=WINDOW_S)
        if isinstance(exc, SecondaryRateLimitExceeded) and self.pause is not None:
            self.pause(wait.total_seconds())
        if retry_count >= self.max_retry:
            return RetryOption(False)
        if wait.total_seconds() > self.max_wait_s:
            return RetryOption(False)  # the call fails now; the delivery's redelivery tries again later
        # githubkit sleeps 60 s for a zero wait (it tests the timedelta's truth) and fails on a negative one: a
        # ``retry-after: 0``, a negative one or a reset already past is retried at once
        return RetryOption(True, max(wait, _AT_ONCE))


_AT_ONCE = timedelta(microseconds=1)


def whole_seconds(response: httpx.Response) -> None:
    """An httpx response hook: a rate-limit answer's ``retry-after`` as whole seconds, for githubkit reads it with
    ``int()`` and raised ``ValueError`` out of the call on anything else (a traceback and a 500, not a failed
    delivery). An HTTP-date or a fraction becomes the seconds it means; a value that means nothing is dropped, as is
    an ``x-ratelimit-reset`` that is no number: githubkit then waits its minute, so the call fails cleanly."""
    if response.status_code not in (403, 429):
        return
    after = response.headers.get("retry-after")
    if after is not None and not _whole(after):
        seconds = _seconds(after)
        if seconds is None:
            del response.headers["retry-after"]
        else:
            response.headers["retry-after"] = str(seconds)
    reset = response.headers.get("x-ratelimit-reset")
    if reset is not None and not _whole(reset):
        del response.headers["x-ratelimit-reset"]


def _whole(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _seconds(text: str) -> int | None:
    """The whole seconds (at least 0) a ``retry-after`` of a fraction or an HTTP-date means; ``None`` if neither."""
    try:
        value = float(text)
    except ValueError:
        try:
            value = (parsedate_to_datetime(text) - datetime.now(UTC)).total_seconds()
        except (TypeError, ValueError):
            return None
    return max(math.ceil(value), 0) if math.isfinite(value) else None
