"""The content limit shared through Redis by every replica (issue 27)."""

from __future__ import annotations

import logging

import pytest
import redis

from app.github.shared_limiter import RedisContentLimiter
from app.github.throttle import ContentQuotaFull


def test_two_clients_share_eighty_a_minute(redis_url: str) -> None:
    # SPEC GH8: two replicas (two clients) together never pass 80 in a minute for one installation
    one = RedisContentLimiter(redis.Redis.from_url(redis_url), 7, max_wait_s=0)
    two = RedisContentLimiter(redis.Redis.from_url(redis_url), 7, max_wait_s=0)
    taken = 0
    for i in range(100):
        try:
            (one if i % 2 else two).acquire()
            taken += 1
        except ContentQuotaFull:
            pass
    assert taken == 80
    other = RedisContentLimiter(redis.Redis.from_url(redis_url), 8, max_wait_s=0)
    other.acquire()  # another installation has its own quota


def test_a_pause_recorded_by_one_is_honoured_by_the_other(redis_url: str) -> None:
    # SPEC GH8: GitHub's back-off seen by one replica holds every replica
    one = RedisContentLimiter(redis.Redis.from_url(redis_url), 9, max_wait_s=0)
    two = RedisContentLimiter(redis.Redis.from_url(redis_url), 9, max_wait_s=0)
    two.acquire()
    one.pause(30)
    with pytest.raises(ContentQuotaFull):
        two.acquire()


def test_a_shorter_pause_told_to_another_replica_never_ends_a_longer_one(redis_url: str) -> None:
    # SPEC GH8: GitHub asked one replica to wait 120 s, then another 5 s: every replica waits the 120 s
    one = RedisContentLimiter(redis.Redis.from_url(redis_url), 10, max_wait_s=0)
    two = RedisContentLimiter(redis.Redis.from_url(redis_url), 10, max_wait_s=0)
    one.pause(120)
    two.pause(5)
    with pytest.raises(ContentQuotaFull) as waited:
        RedisContentLimiter(redis.Redis.from_url(redis_url), 10, max_wait_s=0).acquire()  # a third, new replica
    assert waited.value.wait_s > 100


def test_redis_down_falls_back_at_quota_over_replicas(caplog: pytest.LogCaptureFixture) -> None:
    # SPEC GH8: Redis unreachable never fails a request: in-process at 80 / replicas, said once
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=None)
    limiter = RedisContentLimiter(client, 1, replicas=2, max_wait_s=0)
    with caplog.at_level(logging.WARNING, logger="interlock.limiter"):
        for _ in range(40):
            limiter.acquire()
    with pytest.raises(ContentQuotaFull):
        limiter.acquire()
    assert limiter.status() == "in-process (redis unreachable): 40/min"
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1
