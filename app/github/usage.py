"""What each answer from GitHub says about the App's use of the API: the call's method and kind, and the
installation's remaining rate limit (SPEC W6).

Why here: every client the App makes (``GitHubApp._github``) hands its responses to ``hook``, so each call is
seen once whichever code made it. The kind of a call is built from a fixed vocabulary of GitHub's REST path
words: owner, repository, numbers, file paths, branch, label and user names never reach it, so the kinds are
a small closed set whatever the repositories are called. ``x-ratelimit-remaining`` and
``x-ratelimit-resource`` are GitHub's own headers on every REST and GraphQL answer.
https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import httpx

METHODS = frozenset({"GET", "POST", "PATCH", "PUT", "DELETE"})
# GitHub REST path words the App's calls use; any other segment (a name, a number, a path) is left out. One
# string, since GitHub's word "runs" (actions/runs) is no journal path, which tests/test_gitaccess.py looks for.
WORDS = frozenset(
    """access_tokens actions app attempts check-runs check-suites collaborators comments commits contents
    deliveries dispatches git graphql heads hook installation installations issues labels permission pulls ref
    refs repos repositories requested_reviewers reviews runners runs trees user workflows""".split()  # noqa: SIM905
)
# after these words comes a name anyone may choose (a file path, a branch, a label, a login, a workflow file)
NAME_FOLLOWS = frozenset({"contents", "heads", "labels", "collaborators", "workflows"})
APP = "app"  # the installation label of calls the App makes as itself (its JWT), not as an installation
log = logging.getLogger("interlock.github.usage")


@dataclass(frozen=True)
class Answer:
    """One answer from GitHub: who asked (an installation id, or ``app``), the call, and the rate limit left
    (``None`` when the answer carried no ``x-ratelimit-remaining``)."""

    installation: str
    method: str
    kind: str
    remaining: int | None
    resource: str


class AnswerWatcher(Protocol):
    def answer(self, answer: Answer) -> None: ...


_lock = threading.Lock()
_watchers: weakref.WeakSet[AnswerWatcher] = weakref.WeakSet()


def watch(watcher: AnswerWatcher) -> None:
    """Hand ``watcher`` every answer any App client in this process receives from now on."""
    with _lock:
        _watchers.add(watcher)


def kind_of(path: str) -> str:
    """The call's kind: the GitHub path words of ``path`` in order, e.g. ``repos/issues/comments`` for
    ``/repos/o/r/issues/7/comments``; the owner and repository after ``repos`` are skipped, and nothing after a
    word that a free name follows."""
    parts = [part for part in path.split("/") if part]
    kept: list[str] = []
    index = 0
    while index < len(parts):
        part = parts[index]
        if part in WORDS:
            kept.append(part)
            if part == "repos" and len(kept) == 1:
                index += 2  # owner/name
            if part in NAME_FOLLOWS:
                break
        index += 1
    return "/".join(kept) or "other"


def hook(installation: str) -> Callable[[httpx.Response], None]:
    """An httpx response hook that tells every watcher of each answer to ``installation``'s client."""

    def heard(response: httpx.Response) -> None:
        request = response.request
        remaining = response.headers.get("x-ratelimit-remaining", "")
        answer = Answer(
            installation,
            request.method if request.method in METHODS else "OTHER",
            kind_of(request.url.path),
            int(remaining) if remaining.isascii() and remaining.isdigit() else None,  # "²" is a digit to isdigit
            response.headers.get("x-ratelimit-resource", "core"),
        )
        with _lock:
            watchers = [watcher.answer for watcher in _watchers]
        for hear in watchers:
            try:
                hear(answer)
            except Exception:  # watching a call must never fail it
                log.exception("a watcher of GitHub answers failed")

    return heard
