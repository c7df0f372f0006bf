"""The service's GitHub client on the limiter the settings ask for (issue 27): in-process by default, shared through
Redis by every replica with ``INTERLOCK_REDIS_URL``; a secondary-limit answer pauses the installation for all;
Redis stopped under a running service costs no delivery."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from app.engine.record import Status
from app.github.client import GitHubApp, RateLimited
from app.github.shared_limiter import RedisContentLimiter
from app.github.throttle import CONTENT_PER_MINUTE, ContentLimiter, ContentQuotaFull
from app.webhooks.handlers import service_router
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub
from tests.github.test_flows import World
from tests.helpers import GRAPHS, doc
from tests.redis_server import start_redis, stop_redis

REPO = "octo/app"


def replica(fake: FakeGitHub, settings: ServiceSettings, redis_url: str | None, replicas: int = 1) -> GitHubApp:
    """One service process's client, as ``github_router`` makes it from the settings."""
    identity = replace(settings, api_url="http://github.test/api/v3").app_identity()
    return GitHubApp(identity, transport=fake.transport(), redis_url=redis_url, replicas=replicas)


@pytest.fixture
def fresh_redis(redis_url: str) -> str:
    redis.Redis.from_url(redis_url).flushall()
    return redis_url


def test_without_a_redis_url_each_installation_has_an_in_process_limiter(settings: ServiceSettings) -> None:
    app = replica(FakeGitHub(), settings, None)
    app.installation(42).comment(REPO, 1, "hello")
    assert isinstance(app.limiters["42"], ContentLimiter)
    assert app.limiter_status() == "in-process"


def test_two_replicas_with_one_redis_send_at_most_80_a_minute_together(
    settings: ServiceSettings, fresh_redis: str
) -> None:
    # SPEC GH8: the quota is the installation's, whichever replica sends
    fake = FakeGitHub()
    one, two = replica(fake, settings, fresh_redis, 2), replica(fake, settings, fresh_redis, 2)
    refused = 0
    for n in range(CONTENT_PER_MINUTE + 10):
        try:
            (one if n % 2 else two).installation(42).comment(REPO, 1, f"comment {n}")
        except ContentQuotaFull:
            refused += 1
    assert len(fake.calls("POST")) == CONTENT_PER_MINUTE and refused == 10
    assert isinstance(one.limiters["42"], RedisContentLimiter)
    one.installation(7).comment(REPO, 1, "another installation has its own quota")
    assert len(fake.calls("POST")) == CONTENT_PER_MINUTE + 1
    assert one.limiters["7"].client is one.limiters["42"].client  # one client, one connection pool, per process
    assert one.limiter_status() == "redis"


class SecondaryLimit(httpx.BaseTransport):
    """The stand-in GitHub, except that the first comment is answered with GitHub's secondary-limit 403: without
    ``retry-after``, only its message says which limit (and ``x-ratelimit-remaining: 0``)."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.inner, self.answered = fake.transport(), False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self.answered and request.method == "POST" and request.url.path.endswith("/comments"):
            self.answered = True
            body = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes and try again."}
            headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "4102444800"}
            return httpx.Response(403, json=body, headers=headers, request=request)
        return self.inner.handle_request(request)


@pytest.mark.parametrize("how", ["retry-after", "message"])
def test_a_secondary_limit_answer_to_one_replica_pauses_the_installation_for_the_other(
    settings: ServiceSettings, fresh_redis: str, how: str
) -> None:
    # SPEC GH8: GitHub's back-off told to one replica holds every replica: the other sends nothing meanwhile
    fake = FakeGitHub()
    one, two = replica(fake, settings, fresh_redis, 2), replica(fake, settings, fresh_redis, 2)
    if how == "retry-after":
        fake.fail("POST", "/issues/1/comments", 403, headers={"retry-after": "120"})
    else:
        one.transport = SecondaryLimit(fake)
    with pytest.raises(RateLimited, match="403") as told:  # a GitHubError the delivery queue waits out
        one.installation(42).comment(REPO, 1, "told to wait")
    assert told.value.wait_s >= 120  # retry-after's 120 s, or the reset's far future
    sent = len(fake.calls("POST"))
    with pytest.raises(ContentQuotaFull, match="GitHub asked to wait"):
        two.installation(42).comment(REPO, 1, "from the other replica")
    assert len(fake.calls("POST")) == sent  # not sent at all
    two.installation(7).comment(REPO, 1, "another installation was not told to wait")
    assert len(fake.calls("POST")) == sent + 1


def test_redis_stopped_under_a_service_costs_no_delivery_and_healthz_says_so(
    settings: ServiceSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8: Redis down: the service keeps applying deliveries with the in-process limiter at its share of the
    # quota, says so in /healthz and in one log line, and never fails a delivery over Redis
    proc, url = start_redis(tmp_path)
    try:
        world = World(settings)
        world.app = replica(world.fake, settings, url, replicas=2)
        world.router = service_router(world.app, [GRAPHS], "interlock-app")
        health = TestClient(create_app(settings, router=world.router))
        _, issue = world.label()
        assert world.run(issue).status is Status.RUNNING
        assert health.get("/healthz").json()["limiter"] == "redis"
        assert redis.Redis.from_url(url).zcard("interlock:limit:42:minute") > 0  # counted in Redis
    finally:
        stop_redis(proc)
    with caplog.at_level(logging.WARNING, logger="interlock.limiter"):
        world.comment(issue, "/interlock stop")
        world.job_done(issue, 1, "build", "built it")
        other = world.app.installation(43)  # a second installation: still the one line
        other.comment(REPO, 1, "elsewhere")
    assert world.run(issue).status is Status.INTERRUPTED
    assert health.get("/healthz").json()["limiter"] == "in-process (redis unreachable): 40/min"
    assert len([r for r in caplog.records if "redis unreachable" in r.getMessage()]) == 1


def test_the_readme_says_how_to_run_one_process_or_several() -> None:
    # SPEC GH8: what the README promises an operator is what the tests above check
    from app.github.shared_limiter import RETRY_S
    from app.webhooks.settings import fleet_problems

    text = " ".join(doc("operating/scaling.md").split())
    section = text.split("# Running the service", 1)[1]
    for sentence in (
        "give every replica the same `INTERLOCK_REDIS_URL` (`redis://`, `rediss://` or `unix://`) and set "
        "`INTERLOCK_REPLICAS` to how many run.",
        "a secondary-limit answer to any replica pauses that installation for every replica.",
        '`/healthz` says which limiter is in use: `"limiter": "in-process"`, `"redis"`, or, while Redis cannot be '
        'reached, `"in-process (redis unreachable): 40/min"` (with two replicas).',
        "no delivery fails over Redis; each replica limits itself in-process to its share, the quota divided by "
        "`INTERLOCK_REPLICAS`",
        "logs one line when Redis stops answering and one when it answers again (asked again every 5 seconds)",
    ):
        assert sentence in section, sentence
    assert RETRY_S == 5.0
    assert fleet_problems("redis://cache:6379/0", 2) == [] and fleet_problems("http://cache", 2) != []
