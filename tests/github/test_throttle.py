"""GitHub's secondary rate limits: at most 80 content-creating requests a minute per installation, and bounded waits
on 403/429 answers (issue 16). Clocks are injected: no test sleeps."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest
from githubkit.exception import SecondaryRateLimitExceeded
from githubkit.response import Response

from app.github.client import GitHubApp, GitHubError
from app.github.commits import MUTATION
from app.github.throttle import (
    CONTENT_PER_HOUR,
    CONTENT_PER_MINUTE,
    HOUR_HELD_S,
    MAX_WAIT_S,
    MINUTE_HELD_S,
    WINDOW_S,
    BoundedRateLimitRetry,
    ContentLimiter,
    ContentQuotaFull,
    creates_content,
)
from app.webhooks.service import DEADLINE_S
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub, VirtualClock
from tests.helpers import doc

REPO = "octo/app"


def test_the_81st_in_a_minute_waits_for_the_oldest_to_leave_the_window_or_fails_when_that_is_too_long() -> None:
    clock = VirtualClock()
    limiter = ContentLimiter(clock=clock, sleep=clock.sleep)
    for _ in range(CONTENT_PER_MINUTE):
        limiter.acquire()
    assert clock.slept == []
    with pytest.raises(ContentQuotaFull, match="80 content-creating requests were sent to GitHub in the last minute"):
        limiter.acquire()  # the oldest leaves the window in 62 s (its minute and the margin): too long to wait
    assert len(limiter.sent) == CONTENT_PER_MINUTE
    clock.now += MINUTE_HELD_S - 3.0  # 3 s before the oldest leaves
    limiter.acquire()
    assert clock.slept == [pytest.approx(3.0)]
    window = [t for t in limiter.sent if t > clock.now - 60]
    assert len(window) <= CONTENT_PER_MINUTE  # never more than 80 in any minute


def test_a_place_is_held_past_its_minute_so_late_arrivals_still_make_at_most_80_a_minute() -> None:
    # SPEC GH8: GitHub counts arrivals; a request that took its place at t may arrive up to TRANSIT_MARGIN_S later
    # than one that took its place before it, and the minute GitHub sees still holds at most 80
    clock = VirtualClock()
    limiter = ContentLimiter(clock=clock, sleep=clock.sleep, max_wait_s=120.0)
    late = 2.0  # seconds: as late as TRANSIT_MARGIN_S allows
    arrivals: list[float] = []
    for n in range(400):
        limiter.acquire()
        arrivals.append(clock.now + (late if n == 79 else 0.0))  # the 80th is slow on its way
        clock.now += 0.05
    arrivals.sort()
    assert max(sum(1 for t in arrivals if start <= t < start + WINDOW_S) for start in arrivals) <= CONTENT_PER_MINUTE


def test_the_window_slides_so_no_minute_holds_more_than_80() -> None:
    clock = VirtualClock()
    limiter = ContentLimiter(clock=clock, sleep=clock.sleep, max_wait_s=60.0)
    sent: list[float] = []
    for _ in range(400):
        limiter.acquire()
        sent.append(clock.now)
        clock.now += 0.25  # asked 4 times a second: the limiter spaces them out
    assert max(sum(1 for t in sent if start <= t < start + 60) for start in sent) == CONTENT_PER_MINUTE


def test_no_hour_holds_more_than_500_even_when_every_minute_holds_fewer_than_80() -> None:
    # SPEC GH8: GitHub's hourly content quota binds before the minute's (500 < 60 x 80): kept in-process too
    clock = VirtualClock()
    limiter = ContentLimiter(clock=clock, sleep=clock.sleep)
    for _ in range(CONTENT_PER_HOUR):
        limiter.acquire()
        clock.now += 1.0  # 60 a minute: the minute's window never fills
    with pytest.raises(ContentQuotaFull, match="500 content-creating requests in the last hour"):
        limiter.acquire()  # the oldest leaves the hour in 3,100 s
    clock.now += HOUR_HELD_S - CONTENT_PER_HOUR - 2.0  # 2 s before the oldest leaves the hour (and its margin)
    limiter.acquire()
    assert clock.slept == [pytest.approx(2.0)]


def test_a_pause_holds_every_content_creating_request_until_it_is_over() -> None:
    # SPEC GH8: GitHub's back-off (a secondary limit) is the installation's, not only the request's that was told
    clock = VirtualClock()
    limiter = ContentLimiter(clock=clock, sleep=clock.sleep)
    limiter.pause(60.0)
    with pytest.raises(ContentQuotaFull, match="GitHub asked to wait"):
        limiter.acquire()
    clock.now += 57.0
    limiter.acquire()  # waits the 3 s left
    assert clock.slept == [pytest.approx(3.0)]


def test_the_bound_is_under_the_service_deadline() -> None:
    assert MAX_WAIT_S < DEADLINE_S


def test_reads_and_queries_are_not_counted_mutations_and_writes_are() -> None:
    def post(path: str, body: object) -> httpx.Request:
        return httpx.Request("POST", f"http://github.test/api/v3{path}", content=json.dumps(body))

    assert creates_content(post("/repos/o/r/issues/1/comments", {"body": "x"}))
    assert creates_content(httpx.Request("PATCH", "http://github.test/api/v3/repos/o/r/check-runs/1"))
    assert creates_content(post("/../graphql", {"query": MUTATION}))
    assert not creates_content(post("/../graphql", {"query": "query InterlockSnapshot { x }"}))
    assert not creates_content(httpx.Request("GET", "http://github.test/api/v3/repos/o/r"))
    assert not creates_content(post("/app/installations/1/access_tokens", {}))


def app_for(fake: FakeGitHub, settings: ServiceSettings) -> GitHubApp:
    return GitHubApp(replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=fake.transport())


def test_the_client_never_sends_the_81st_content_creating_request_of_a_minute(settings: ServiceSettings) -> None:
    fake = FakeGitHub()
    app = app_for(fake, settings)
    clock = VirtualClock()
    app.limiters["42"] = ContentLimiter(clock=clock, sleep=clock.sleep)
    api = app.installation(42)
    for n in range(CONTENT_PER_MINUTE):
        api.comment(REPO, 1, f"comment {n}")
    api.ref(REPO, "main")  # a read is never held back
    with pytest.raises(ContentQuotaFull):
        api.comment(REPO, 1, "one too many")
    assert len(fake.calls("POST")) == CONTENT_PER_MINUTE and len(fake.calls("GET")) == 1
    other = app.installation(7)  # another installation has its own minute
    other.comment(REPO, 1, "elsewhere")
    assert len(fake.calls("POST")) == CONTENT_PER_MINUTE + 1
    replica = app_for(fake, settings)  # another service process (a replica): its own count, as the README says
    replica.limiters["42"] = ContentLimiter(clock=clock, sleep=clock.sleep)
    replica.installation(42).comment(REPO, 1, "from the replica")
    assert len(fake.calls("POST")) == CONTENT_PER_MINUTE + 2


def limited(headers: dict[str, str]) -> SecondaryRateLimitExceeded:
    request = httpx.Request("POST", "http://github.test/api/v3/repos/o/r/issues/1/comments")
    response = Response(httpx.Response(403, headers=headers, request=request), object)
    wait = timedelta(seconds=int(headers["retry-after"])) if "retry-after" in headers else None
    return SecondaryRateLimitExceeded(response, wait)  # type: ignore[arg-type]


def test_a_rate_limit_answer_is_retried_once_within_the_bound_and_never_beyond() -> None:
    decide = BoundedRateLimitRetry()
    assert decide(limited({"retry-after": "2"}), 0) == (True, timedelta(seconds=2))
    assert decide(limited({"retry-after": "2"}), 1).do_retry is False  # once
    assert decide(limited({"retry-after": "60"}), 0).do_retry is False  # longer than a delivery waits


def test_a_long_retry_after_fails_the_call_at_once_and_a_short_one_is_waited_for(settings: ServiceSettings) -> None:
    # the delivery fails cleanly (its redelivery carries it out later) instead of outliving its deadline
    fake = FakeGitHub()
    api = app_for(fake, settings).installation(42)
    fake.fail("POST", "/issues/1/comments", 403, headers={"retry-after": "120", "x-ratelimit-remaining": "0"})
    with pytest.raises(GitHubError, match="403"):
        api.comment(REPO, 1, "x")
    assert fake.calls("POST") == ["POST /repos/octo/app/issues/1/comments"]  # not retried
    # SPEC GH8: GitHub's back-off holds the installation: the next content-creating request is not even sent
    with pytest.raises(ContentQuotaFull, match="GitHub asked to wait"):
        api.comment(REPO, 1, "x again")
    assert len(fake.calls("POST")) == 1
    api = app_for(fake, settings).installation(42)
    fake.fail("POST", "/issues/1/comments", 429, headers={"retry-after": "0"})
    api.comment(REPO, 1, "y")  # retried once, after GitHub's (here: no) wait
    assert len(fake.calls("POST")) == 3 and len(fake.comments) == 1


def test_the_readme_says_what_the_limiter_and_the_backoff_do() -> None:
    text = " ".join(doc("operating/service.md").split())
    assert (
        "The service never sends more than 80 content-creating requests (REST writes and GraphQL mutations) a minute "
        "per installation, nor 500 an hour, and waits for GitHub's `retry-after` on a 403 or 429 once: a request that "
        "would wait more than 5 seconds, for either, fails that attempt cleanly instead of holding a worker, and the "
        "queue takes the delivery again after its back-off. A secondary-limit answer (a 403 or 429 with "
        '`retry-after`, or GitHub\'s "secondary rate limit" message) also pauses that installation: no '
        "content-creating request goes to it until GitHub's wait is over. One service process keeps the count and the "
        "pause in memory; with `INTERLOCK_REDIS_URL` set, they are kept in Redis, so several replicas of the service "
        "behind one App share one count and one pause, and together never send more"
    ) in text
    # the pause and the shared count: tests/github/test_limiter_wiring.py; the hour: below
    assert (CONTENT_PER_MINUTE, CONTENT_PER_HOUR, MAX_WAIT_S) == (80, 500, 5.0)


@pytest.mark.parametrize(
    "headers", [{"retry-after": "0"}, {"retry-after": "-5"}, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1"}]
)
def test_a_zero_negative_or_past_wait_is_retried_at_once_not_after_a_minute_nor_with_a_crash(
    settings: ServiceSettings, headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # githubkit sleeps 60 s when the wait is a zero timedelta (falsy) and time.sleep(-5) raises ValueError: a
    # delivery would outlive its deadline, or fail with a traceback instead of being retried (issue 16, item 1)
    import githubkit.core

    slept: list[float] = []

    def sleep(seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        slept.append(seconds)

    monkeypatch.setattr(githubkit.core.time, "sleep", sleep)
    fake = FakeGitHub()
    api = app_for(fake, settings).installation(42)
    fake.fail("POST", "/issues/1/comments", 429, headers=headers)
    api.comment(REPO, 1, "y")
    assert len(fake.calls("POST")) == 2 and len(fake.comments) == 1  # retried once
    assert len(slept) == 1 and 0 <= slept[0] <= MAX_WAIT_S


@pytest.mark.parametrize(
    ("headers", "retried"),
    [
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, True),  # an HTTP-date (RFC 9110) already past
        ({"retry-after": "soon"}, False),  # not a number: as without the header, GitHub's minute
        ({"retry-after": "1.5"}, True),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "tomorrow"}, False),
    ],
)
def test_a_retry_after_that_is_not_whole_seconds_fails_the_call_cleanly_or_is_waited_for(
    settings: ServiceSettings, headers: dict[str, str], retried: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # githubkit reads the header with int(): anything else raised ValueError out of the call (a traceback and a 500
    # instead of GitHubError, which the service answers as a failed delivery its redelivery carries out)
    import githubkit.core

    slept: list[float] = []
    monkeypatch.setattr(githubkit.core.time, "sleep", slept.append)
    fake = FakeGitHub()
    api = app_for(fake, settings).installation(42)
    fake.fail("POST", "/issues/1/comments", 403, headers=headers)
    if retried:
        api.comment(REPO, 1, "y")
        assert len(fake.calls("POST")) == 2 and len(slept) == 1 and 0 <= slept[0] <= MAX_WAIT_S
    else:
        with pytest.raises(GitHubError, match="403"):
            api.comment(REPO, 1, "y")
        assert len(fake.calls("POST")) == 1 and slept == []


def test_a_request_never_waits_longer_than_the_bound_in_all_even_behind_another_waiting_request() -> None:
    # the wait for the lock (another request sleeping for its place) and the wait for a place are one bound: two
    # waits of up to 5 s each would be 10 s, past the service's 8 s deadline (issue 16)
    bound = 0.3
    limiter = ContentLimiter(per_minute=2, max_wait_s=bound)
    start = time.monotonic()
    limiter.sent.extend([start - MINUTE_HELD_S + 0.25, start - MINUTE_HELD_S + 0.5])  # free in 0.25 s, in 0.5 s
    waited: dict[str, float | str] = {}

    def ask(name: str) -> None:
        began = time.monotonic()
        try:
            limiter.acquire()
            waited[name] = time.monotonic() - began
        except ContentQuotaFull:
            waited[name] = "full"

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    time.sleep(0.02)  # the first holds the limiter while it sleeps for its place
    ask("second")
    first.join()
    assert isinstance(waited["first"], float) and waited["first"] <= bound
    assert waited["second"] == "full" or waited["second"] <= bound + 0.05, waited
