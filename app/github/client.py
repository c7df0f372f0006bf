"""The only code that talks to GitHub: an installation's REST calls through githubkit.

githubkit signs the app's JWT (at most 10 minutes) and exchanges it for installation tokens (1 hour),
caching each until shortly before it expires; every client gets its own cache. Its retry chain waits on
rate limits (honouring ``retry-after``) only as long as a delivery may wait, and on 5xx answers; each
installation sends at most 80 content-creating requests a minute and 500 an hour (``app/github/throttle.py``),
counted in this process, or in Redis for every replica when the service has one (``app/github/shared_limiter.py``);
a secondary-limit answer pauses the installation's limiter. Responses are read as
plain JSON, leniently: a field GitHub added or dropped never fails a call that does not use it.
Every request is counted, so the calls a transition costs can be measured.
https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import RateLimitExceeded, RequestFailed
from githubkit.retry import RetryChainDecision

from app.engine.errors import InterlockError
from app.gitaccess import ON_GITHUB
from app.github import usage
from app.github.dispatched import DispatchedRun, parse_runs
from app.github.lost_answer import MakesNothingTwice, answer_may_be_lost, made_comment, since
from app.github.snapshot import Snapshot, read_snapshot
from app.github.throttle import (
    WINDOW_S,
    BoundedRateLimitRetry,
    ContentLimiter,
    ContentThrottler,
    Limiter,
    whole_seconds,
)
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


@dataclass(frozen=True)
class AppIdentity:
    """Who the app is and where its API lives: plain values, so that the adapter knows no shell's settings.
    ``secrets`` are values no answer may echo back into a log or an error (the key, the webhook secret)."""

    app_id: str
    private_key: str
    api_url: str
    secrets: tuple[str, ...] = ()
    slug: str | None = None  # the app's slug when known: its bot's events are its own

    def __repr__(self) -> str:  # never print the key
        return f"AppIdentity(app_id={self.app_id!r}, api_url={self.api_url!r})"


class GitHubApp:
    """The app: makes installation clients, and app-level calls such as webhook redelivery. ``redis_url``: the
    Redis every replica shares (the service's ``INTERLOCK_REDIS_URL``), where each installation's quota is
    counted; ``replicas``: how many there are, whose share of the quota each keeps while Redis is unreachable."""

    def __init__(
        self,
        identity: AppIdentity,
        transport: httpx.BaseTransport | None = None,
        redis_url: str | None = None,
        replicas: int = 1,
    ) -> None:
        self.identity = identity
        self.transport = transport
        self.cache = MemCacheStrategy()
        self.calls: Counter[str] = Counter()
        self.limiters: dict[str, Limiter] = {}  # installation id (or "app") -> its content-creating windows
        self.new_limiter: Callable[[str], Limiter] = lambda _who: ContentLimiter()  # tests give a clock of their own
        if redis_url is not None:
            self.new_limiter = shared_limiters(redis_url, replicas)
        secrets = [identity.private_key, *identity.secrets]
        self.redactor = Redactor(extra=[s for s in secrets if s])

    def limiter(self, who: str) -> Limiter:
        """The installation's limiter (``who``: its id, or ``usage.APP``), made on first use."""
        found = self.limiters.get(who)
        if found is None:
            found = self.limiters.setdefault(who, self.new_limiter(who))
        return found

    def limiter_status(self) -> str:
        """Which limiter is in use, for ``/healthz``: ``in-process``, ``redis``, or the fallback while Redis is
        unreachable (any installation's says so: they share one view of Redis)."""
        if not self.limiters:
            return self.new_limiter(usage.APP).status()
        shown = [limiter.status() for limiter in list(self.limiters.values())]
        return next((status for status in shown if status.startswith("in-process (")), shown[0])

    def _github(self, auth: Any, who: str = usage.APP) -> GitHub[Any]:
        limiter = self.limiter(who)
        retries = RetryChainDecision(BoundedRateLimitRetry(pause=limiter.pause), MakesNothingTwice(max_retry=3))
        return GitHub(
            auth,
            base_url=self.identity.api_url,
            cache_strategy=self.cache,
            transport=self.transport,
            auto_retry=retries,
            throttler=ContentThrottler(limiter),
            http_cache=False,
            event_hooks={"request": [self._count], "response": [whole_seconds, usage.hook(who)]},  # usage: SPEC W6
        )

    def _count(self, request: httpx.Request) -> None:
        if not request.url.path.endswith("/access_tokens"):
            self.calls[f"{request.method} {request.url.path}"] += 1

    def installation(self, installation_id: int) -> Installation:
        auth = AppInstallationAuthStrategy(self.identity.app_id, self.identity.private_key, installation_id)
        return Installation(self._github(auth, str(installation_id)), self.redactor)

    def as_app(self) -> Installation:
        auth = AppAuthStrategy(self.identity.app_id, self.identity.private_key)
        return Installation(self._github(auth), self.redactor)

    def api_calls(self) -> int:
        return sum(self.calls.values())


class Installation:
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

    def permission(self, repo: str, user: str) -> str:
        """``admin``, ``maintain``, ``write``, ``triage``, ``read`` or ``none`` (404: not a collaborator)."""
        data = self.call("GET", f"/repos/{repo}/collaborators/{user}/permission", missing_ok=True)
        if not isinstance(data, dict):
            return "none"
        role = data.get("role_name")
        return role if isinstance(role, str) and role else str(data.get("permission") or "none")

    def file(self, repo: str, path: str, ref: str) -> bytes | None:
        url = f"/repos/{repo}/contents/{in_url(path)}"
        data = self.call("GET", url, params={"ref": ref}, headers=RAW, missing_ok=True)
        if data is None:
            return None
        if isinstance(data, dict) and isinstance(data.get("content"), str):  # a server that ignored the raw type
            return base64.b64decode(data["content"])
        return bytes(data)

    def file_only(self, repo: str, path: str, ref: str) -> bytes | None:
        """``path`` at ``ref`` if it is a FILE, else ``None``: the raw form ``file`` reads answers a folder's
        listing as text; the JSON form says the type (a file over 1 MB comes without content: read raw)."""
        data = self.call("GET", f"/repos/{repo}/contents/{in_url(path)}", params={"ref": ref}, missing_ok=True)
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        content = data.get("content")
        if data.get("encoding") == "base64" and isinstance(content, str):
            return base64.b64decode(content)
        return self.file(repo, path, ref)

    def app_identity(self) -> dict[str, Any]:
        """The app itself (``GET /app``, with the app's JWT): its slug and name; a 401 means bad credentials."""
        data = self.call("GET", "/app")
        return data if isinstance(data, dict) else {}

    def repo_installation(self, repo: str) -> dict[str, Any] | None:
        """The app's installation on ``repo`` (with the app's JWT): id, permissions, events; ``None`` when the
        app is not installed there."""
        data = self.call("GET", f"/repos/{repo}/installation", missing_ok=True)
        return data if isinstance(data, dict) else None

    def repository(self, repo: str) -> dict[str, Any] | None:
        data = self.call("GET", f"/repos/{repo}", missing_ok=True)
        return data if isinstance(data, dict) else None

    def label(self, repo: str, name: str) -> dict[str, Any] | None:
        data = self.call("GET", f"/repos/{repo}/labels/{quote(name, safe='')}", missing_ok=True)
        return data if isinstance(data, dict) else None

    def folder(self, repo: str, path: str, ref: str, kind: str = "file") -> list[str] | None:
        """The names of the files (``kind`` "dir": the folders) directly in folder ``path`` at ``ref``; ``None``
        when there is no such folder. https://docs.github.com/en/rest/repos/contents#get-repository-content"""
        data = self.call(
            "GET", f"/repos/{repo}/contents/{in_url(path.strip('/'))}", params={"ref": ref}, missing_ok=True
        )
        if not isinstance(data, list):
            return None
        return [str(entry["name"]) for entry in data if isinstance(entry, dict) and entry.get("type") == kind]

    def runners(self, repo: str) -> list[tuple[set[str], str]]:
        """Each self-hosted runner of the repository: its labels (lower case) and status (needs Administration)."""
        data = self.call("GET", f"/repos/{repo}/actions/runners", params={"per_page": 100})
        found = []
        for runner in data.get("runners", []) if isinstance(data, dict) else []:
            labels = {
                str(label.get("name", "")).lower() for label in runner.get("labels", []) if isinstance(label, dict)
            }
            found.append((labels, str(runner.get("status", ""))))
        return found

    def ref(self, repo: str, branch: str) -> str | None:
        data = self.call("GET", f"/repos/{repo}/git/ref/heads/{in_url(branch)}", missing_ok=True)
        return str(data["object"]["sha"]) if isinstance(data, dict) else None

    def commit_tree(self, repo: str, sha: str) -> str:
        return str(self.call("GET", f"/repos/{repo}/git/commits/{sha}")["tree"]["sha"])

    def tree(self, repo: str, entries: list[dict[str, Any]], base: str | None) -> str:
        body: dict[str, Any] = {"tree": entries}
        if base:
            body["base_tree"] = base
        return str(self.call("POST", f"/repos/{repo}/git/trees", json=body)["sha"])

    def commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str:
        author = {"name": ON_GITHUB.name, "email": ON_GITHUB.email}
        body = {"message": message, "tree": tree, "parents": parents, "author": author}
        return str(self.call("POST", f"/repos/{repo}/git/commits", json=body)["sha"])

    def create_ref(self, repo: str, branch: str, sha: str) -> None:
        self.call("POST", f"/repos/{repo}/git/refs", json={"ref": f"refs/heads/{branch}", "sha": sha})

    def update_ref(self, repo: str, branch: str, sha: str) -> None:
        """Fast-forward only: a writer who moved the branch first makes this fail with ``RefConflict``."""
        self.call("PATCH", f"/repos/{repo}/git/refs/heads/{in_url(branch)}", json={"sha": sha, "force": False})

    def shown(self, body: str) -> str:
        """A body as GitHub keeps it: secrets masked (agents' answers and decision files reach comments), and
        cut to GitHub's limit, which refuses longer ones (422) — a delivery would fail on it for ever."""
        return fit_body(self.redactor.text(body))

    def comment(self, repo: str, issue: int, body: str) -> int:
        """The comment posted, once: when its answer is lost, the comment GitHub made of it is found instead of a
        second one posted (``app/github/lost_answer.py``)."""
        shown, after = self.shown(body), since()
        try:
            data = self.call("POST", f"/repos/{repo}/issues/{issue}/comments", json={"body": shown})
        except Exception as exc:
            made = made_comment(self, repo, issue, shown, after) if answer_may_be_lost(exc) else None
            if made is None:
                raise
            return made
        return int(data["id"])

    def comment_once(self, repo: str, issue: int, body: str, mark: str) -> None:
        """``body`` and ``mark`` (a hidden line) posted unless a comment of the issue carries ``mark`` already:
        a redelivery, or a second replica, that would say it again says nothing."""
        if not any(mark in comment["body"] for comment in self.issue_comments(repo, issue)):
            self.comment(repo, issue, f"{body}\n\n{mark}" if mark not in body else body)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> None:
        self.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json={"body": self.shown(body)})

    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> int | None:
        """``workflow_dispatch`` (at most 25 inputs); with ``return_run_details`` GitHub says the run id."""
        body = {"ref": ref, "inputs": inputs, "return_run_details": True}
        data = self.call("POST", f"/repos/{repo}/actions/workflows/{workflow}/dispatches", json=body)
        run_id = data.get("workflow_run_id") if isinstance(data, dict) else None
        return run_id if isinstance(run_id, int) else None

    def add_labels(self, repo: str, issue: int, labels: list[str]) -> None:
        self.call("POST", f"/repos/{repo}/issues/{issue}/labels", json={"labels": labels})

    def remove_label(self, repo: str, issue: int, label: str) -> None:
        """Remove a label; one that is not there (404) is fine."""
        self.call("DELETE", f"/repos/{repo}/issues/{issue}/labels/{quote(label, safe='')}", missing_ok=True)

    def dispatched_titles(self, repo: str, branch: str) -> list[str]:
        """Titles of the recent ``workflow_dispatch`` runs on ``branch``: which missions already have a job."""
        return [run.title for run in self.dispatched_runs(repo, branch)]

    def dispatched_runs(self, repo: str, branch: str) -> list[DispatchedRun]:
        """The recent ``workflow_dispatch`` runs on ``branch``, newest first: title, id, status, times."""
        data = self.call(
            "GET",
            f"/repos/{repo}/actions/runs",
            params={"branch": branch, "event": "workflow_dispatch", "per_page": 50},
        )
        return parse_runs(data)

    def review_comments(self, repo: str, number: int, review_id: int) -> list[str]:
        """The inline comments of a review, as ``path:line: body`` lines (they are amendments too, SPEC GH5)."""
        data = self.call("GET", f"/repos/{repo}/pulls/{number}/reviews/{review_id}/comments", missing_ok=True)
        lines = []
        for comment in data if isinstance(data, list) else []:
            where = f"{comment.get('path', '?')}:{comment.get('line') or comment.get('original_line') or '?'}"
            lines.append(f"- {where}: {str(comment.get('body', '')).strip()}")
        return lines

    def create_pull(self, repo: str, head: str, base: str, title: str, body: str, draft: bool) -> dict[str, Any]:
        """The branch's pull request, made once: when an earlier attempt's answer was lost, GitHub refuses a second
        one (422) and the open one is found instead; a 422 with none open (no commits) is raised."""
        fields = {"head": head, "base": base, "title": title, "body": body, "draft": draft}
        try:
            data = self.call("POST", f"/repos/{repo}/pulls", json=fields)
        except Exception as exc:
            refused = isinstance(exc, GitHubError) and exc.status == 422
            found = self.open_pull(repo, head) if refused or answer_may_be_lost(exc) else None
            if found is None:
                raise
            return found
        return {"number": int(data["number"]), "node_id": str(data.get("node_id", ""))}

    def edit_pull(self, repo: str, number: int, body: str) -> None:
        """A pull request's body rewritten: the links between the pull requests of a run (SPEC U7)."""
        self.call("PATCH", f"/repos/{repo}/pulls/{number}", json={"body": body})

    def request_reviewers(self, repo: str, number: int, reviewers: list[str]) -> None:
        if reviewers:
            self.call("POST", f"/repos/{repo}/pulls/{number}/requested_reviewers", json={"reviewers": reviewers})

    def pull(self, repo: str, number: int) -> dict[str, Any] | None:
        """A pull request's number, node id, state and whether it is a draft; ``None`` when there is none."""
        data = self.call("GET", f"/repos/{repo}/pulls/{number}", missing_ok=True)
        return _pull_fields(data) if isinstance(data, dict) else None

    def open_pull(self, repo: str, branch: str) -> dict[str, Any] | None:
        """The open pull request from ``branch`` of ``repo`` itself, if there is one."""
        owner = repo.split("/", 1)[0]
        data = self.call("GET", f"/repos/{repo}/pulls", params={"head": f"{owner}:{branch}", "state": "open"})
        found = [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
        return _pull_fields(found[0]) if found else None

    def reviewers_asked(self, repo: str, number: int) -> set[str]:
        """Who was asked to review a pull request: those still requested, and those who reviewed already."""
        requested = self.call("GET", f"/repos/{repo}/pulls/{number}/requested_reviewers")
        reviews = self.call("GET", f"/repos/{repo}/pulls/{number}/reviews", params={"per_page": 100})
        users = (requested.get("users", []) if isinstance(requested, dict) else []) + [
            review.get("user") or {} for review in (reviews if isinstance(reviews, list) else [])
        ]
        return {str(user.get("login")) for user in users if isinstance(user, dict) and user.get("login")}

    def issue_comments(self, repo: str, issue: int, pages: int = 10, after: str | None = None) -> list[dict[str, Any]]:
        """The comments of an issue (id and body), oldest first: up to ``pages`` pages of 100; ``after``: only
        those updated since then (GitHub's ``since``), so a long issue's newest are among those read."""
        found: list[dict[str, Any]] = []
        for page in range(1, pages + 1):
            params: dict[str, Any] = {"per_page": 100, "page": page} | ({"since": after} if after else {})
            data = self.call("GET", f"/repos/{repo}/issues/{issue}/comments", params=params)
            batch = [c for c in data if isinstance(c, dict)] if isinstance(data, list) else []
            found += [{"id": c.get("id"), "body": str(c.get("body") or "")} for c in batch]
            if len(batch) < 100:
                break
        return found

    def labels(self, repo: str, issue: int) -> set[str]:
        data = self.call("GET", f"/repos/{repo}/issues/{issue}/labels", params={"per_page": 100}, missing_ok=True)
        return {str(item.get("name")) for item in data if isinstance(item, dict)} if isinstance(data, list) else set()

    def mark_ready(self, node_id: str) -> None:
        """REST cannot undraft a pull request; GraphQL's ``markPullRequestReadyForReview`` can.
        https://docs.github.com/en/graphql/reference/mutations#markpullrequestreadyforreview"""
        query = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { clientMutationId } }"
        self.github.graphql(query, {"id": node_id})

    def create_issue(self, repo: str, title: str, body: str, labels: list[str] | None = None) -> dict[str, Any]:
        fields: dict[str, Any] = {"title": self.redactor.text(title), "body": self.shown(body)}
        data = self.call("POST", f"/repos/{repo}/issues", json={**fields, **({"labels": labels} if labels else {})})
        return {"number": int(data["number"]), "url": str(data.get("html_url", ""))}

    def issues_labelled(self, repo: str, label: str) -> list[dict[str, Any]]:
        """The newest 100 issues, open or closed, that carry ``label`` (pull requests left out)."""
        data = self.call("GET", f"/repos/{repo}/issues", params={"labels": label, "state": "all", "per_page": 100})
        found = data if isinstance(data, list) else []
        return [issue for issue in found if isinstance(issue, dict) and "pull_request" not in issue]

    def repository_dispatch(self, repo: str, event_type: str, payload: dict[str, Any]) -> None:
        self.call("POST", f"/repos/{repo}/dispatches", json={"event_type": event_type, "client_payload": payload})

    def snapshot(self, repo: str, branch: str, paths: list[str], heads: tuple[str, ...] = ()) -> Snapshot | None:
        """The branch's head, tree and ``paths`` at that commit, in one GraphQL call (``app/github/snapshot.py``)."""
        return read_snapshot(self, repo, branch, paths, heads)


def shared_limiters(redis_url: str, replicas: int) -> Callable[[str], Limiter]:
    """A maker of Redis-shared limiters keyed by installation, all on one client (one connection pool) and one
    view of whether Redis answers. Imported here, not at the top: a core install has no ``redis`` package."""
    from app.github.shared_limiter import RedisContentLimiter, RedisLink

    link = RedisLink.from_url(redis_url, replicas)
    return lambda who: RedisContentLimiter(link.client, who, replicas=replicas, link=link)


def _pull_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": int(data["number"]),
        "node_id": str(data.get("node_id", "")),
        "draft": data.get("draft") is True,
        "state": str(data.get("state", "open")),
    }


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
