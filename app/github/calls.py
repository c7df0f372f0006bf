"""The one REST call every GitHub request of an installation goes through, and the errors it raises.

``Installation`` (``app/github/client.py``) is made of this class and of the calls on pull requests
(``app/github/pulls.py``) and on issues (``app/github/issues.py``) built on it: one place decides how an
answer is read (plain JSON, leniently), how a refusal becomes an error, and how a body is fit for GitHub.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from githubkit import GitHub
from githubkit.exception import RateLimitExceeded, RequestFailed

from app.engine.errors import InterlockError
from app.github.throttle import WINDOW_S
from app.github.web import web_url
from app.redact import Redactor

RAW = {"accept": "application/vnd.github.raw+json"}


class GitHubError(InterlockError):
    def __init__(self, method: str, url: str, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"GitHub answered {status} to {method} {url}: {message}")


class RateLimited(GitHubError):
    """GitHub refused the request for a rate limit (403 or 429: a secondary limit's ``retry-after``, or the
    primary limit spent until its reset), and the one retry within the bound did not help: ``wait_s`` is how
    long GitHub asked to wait, a minute when it did not say. The delivery queue waits that long
    (``app/webhooks/deliveries/workers.py``) instead of counting it as a failure.
    https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit"""

    def __init__(self, method: str, url: str, status: int, message: str, wait_s: float) -> None:
        super().__init__(method, url, status, message)
        self.wait_s = wait_s


class RefConflict(GitHubError):
    """A ref moved underneath: the fast-forward check of an update failed (422)."""


class RestCalls:
    """REST calls on behalf of one installation, each returning plain data."""

    def __init__(self, github: GitHub[Any], redactor: Redactor | None = None) -> None:
        self.github = github
        self.redactor = redactor or Redactor()

    @property
    def web(self) -> str:
        """Where people see what these calls change: the web host of the API (``app/github/web.py``)."""
        return web_url(str(self.github.config.base_url))

    def call(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        missing_ok: bool = False,
    ) -> Any:
        """The answer as plain JSON (the bytes for ``RAW``, ``{}`` for none); ``None`` for a 404 when ``missing_ok``.
        A refusal is raised as ``GitHubError``: ``RateLimited`` for a rate limit its retries outlasted,
        ``RefConflict`` for a fast-forward refused."""
        try:
            response = self.github.request(method, url, json=json, params=params, headers=headers)
        except RateLimitExceeded as exc:
            wait = exc.retry_after.total_seconds() if exc.retry_after is not None else WINDOW_S
            raise RateLimited(method, url, exc.response.status_code, exc.response.text[:300], max(wait, 0.0)) from None
        except RequestFailed as exc:
            status = exc.response.status_code
            if missing_ok and status == 404:
                return None
            text = exc.response.text[:300]
            error = RefConflict if status == 422 and "/git/refs" in url and method == "PATCH" else GitHubError
            raise error(method, url, status, text) from None
        if response.status_code == 204 or not response.content:
            return {}
        if headers is RAW:
            return response.content
        return response.json()

    def shown(self, body: str) -> str:
        """A body as GitHub keeps it: secrets masked (agents' answers and decision files reach comments), and
        cut to GitHub's limit, which refuses longer ones (422) — a delivery would fail on it for ever."""
        return fit_body(self.redactor.text(body))


BODY_LIMIT = 65536  # characters of an issue or comment body GitHub accepts
CUT_NOTE = "\n\n… (cut: GitHub keeps at most 65536 characters)"


def in_url(path: str) -> str:
    """``path`` (file, folder, branch) in a URL: each segment quoted, so a ``%`` or space is part of the path."""
    return quote(path, safe="/")


def fit_body(body: str) -> str:
    """``body`` within GitHub's limit, cut before its end; the hidden mark a comment ends with (``<!-- ... -->``,
    how a redelivery finds it again) is kept."""
    if len(body) <= BODY_LIMIT:
        return body
    head, sep, mark = body.rpartition("\n\n<!-- ")
    tail = sep + mark if sep and len(mark) < 500 else ""
    head = head if tail else body
    return head[: BODY_LIMIT - len(CUT_NOTE) - len(tail)] + CUT_NOTE + tail
