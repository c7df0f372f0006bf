"""Answers GitHub may lose (issue 28 part 4, SPEC GH8): a request GitHub carried out whose answer never came back.

A timeout after the request was sent, a connection cut mid-answer, or a 5xx (GitHub documents that a 502 may
come after the work was done) leave the App not knowing whether an issue, a comment, a pull request, a check run
or a dispatched job was made. Sending it again would make a second one. So:

- the client never retries by itself a ``POST`` that makes something (``MakesNothingTwice``; githubkit's own
  server-error retry would, three times); reads, edits and content-addressed git objects are retried as before;
- what is made is found again before it is made a second time: a comment by its text (``made_comment``), a
  request issue by its marker (``app/webhooks/teams/requests.py``), a pull request by its branch (GitHub refuses a
  second one with 422), a check run by the run's ``external_id`` on the head, the board and supervision issues
  by their markers.
https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#timeouts
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

import httpx
from githubkit.exception import GitHubException, RequestError, RequestFailed, RequestTimeout
from githubkit.retry import RetryServerError
from githubkit.typing import RetryOption


class Calls(Protocol):
    """The REST call of ``app/github/client.py``'s ``Installation``, which imports this module."""

    def call(self, method: str, url: str, *, params: dict[str, Any] | None = None) -> Any: ...


T = TypeVar("T")

MAKES = re.compile(r"/(issues|comments|pulls|check-runs|dispatches)$")  # POSTs that make a thing people see
SENT_BEFORE = timedelta(minutes=2)  # how far back a lost comment is looked for: clocks differ, GitHub's lags


MAKING_MUTATIONS = (b"createCheckRun",)  # GraphQL mutations the App sends that make something (check_move.py)


def makes_something(method: str, path: str, content: bytes = b"") -> bool:
    """Whether a request makes an issue, a comment, a pull request, a check run or a job: sent twice, two."""
    if method != "POST":
        return False
    if path.endswith("/graphql"):
        return any(name in content for name in MAKING_MUTATIONS)
    return MAKES.search(path) is not None


class MakesNothingTwice(RetryServerError):
    """githubkit's retry of a 5xx answer, but never for a request that makes something: that 5xx may have come
    after the making, and the caller finds it again instead (``made_comment`` and the others above)."""

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        request = exc.request if isinstance(exc, RequestFailed) else None
        if request is not None and makes_something(request.method, request.url.path, request.content):
            return RetryOption(False)
        return super().__call__(exc, retry_count)


def answer_may_be_lost(exc: BaseException) -> bool:
    """Whether GitHub may have done what a failed request asked: its answer timed out or was cut off after the
    request was sent, or GitHub failed (5xx). A connection never made, or a 4xx, did nothing."""
    status = getattr(exc, "status", None)  # a GitHubError (app/github/calls.py): GitHub answered
    if isinstance(status, int):
        return status >= 500
    if isinstance(exc, RequestTimeout):
        return not isinstance(exc.exc, (httpx.ConnectTimeout, httpx.PoolTimeout))
    if isinstance(exc, RequestError):
        return isinstance(exc.exc, (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError))
    return isinstance(exc, (httpx.ReadTimeout, httpx.WriteTimeout, httpx.ReadError, httpx.RemoteProtocolError))


def made_once(
    make: Callable[[], T], look_up: Callable[[], T | None], refused: Callable[[Exception], bool] = lambda _exc: False
) -> T:
    """What ``make`` makes, made once: when its request failed in a way that may have made it anyway (its answer
    lost, or GitHub ``refused`` a second one), ``look_up`` finds what was made instead of making it again; when
    it finds nothing, the failure is raised. A comment and a pull request are made this way."""
    try:
        return make()
    except Exception as exc:
        found = look_up() if refused(exc) or answer_may_be_lost(exc) else None
        if found is None:
            raise
        return found


def since(moment: datetime | None = None) -> str:
    """The ``since`` of a listing that finds what was made from ``moment`` (now; a moment to come counts as now)
    on, with room for clocks that differ."""
    now = datetime.now(UTC)
    return f"{min(moment or now, now) - SENT_BEFORE:%Y-%m-%dT%H:%M:%SZ}"


def made_comment(api: Calls, repo: str, issue: int, shown: str, after: str) -> int | None:
    """The id of the comment with exactly ``shown`` as its body that a bot (the App) made on the issue since
    ``after``: the comment a lost answer made; ``None`` when GitHub shows none (it did not make it: sending it
    again is right). A person's comment of the same words is never taken for the App's. The same words the App
    itself posted within the last two minutes are taken for it (a reply said twice that fast says nothing new)."""
    path = f"/repos/{repo}/issues/{issue}/comments"
    found: Any = api.call("GET", path, params={"since": after, "per_page": 100})
    for comment in reversed(found if isinstance(found, list) else []):
        if not isinstance(comment, dict) or (comment.get("user") or {}).get("type") != "Bot":
            continue
        if comment.get("body") == shown and isinstance(comment.get("id"), int):
            return int(comment["id"])
    return None
