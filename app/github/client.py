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

import httpx
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.retry import RetryChainDecision

from app.gitaccess import ON_GITHUB
from app.github import usage
from app.github.calls import RAW, in_url
from app.github.calls import GitHubError as GitHubError  # the errors, imported from here by the shells
from app.github.calls import RateLimited as RateLimited
from app.github.calls import RefConflict as RefConflict
from app.github.dispatched import DispatchedRun, parse_runs
from app.github.issues import IssueCalls
from app.github.lost_answer import MakesNothingTwice
from app.github.pulls import PullRequestCalls
from app.github.snapshot import Snapshot, read_snapshot
from app.github.throttle import (
    BoundedRateLimitRetry,
    ContentLimiter,
    ContentThrottler,
    Limiter,
    whole_seconds,
)
from app.redact import Redactor


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


class Installation(PullRequestCalls, IssueCalls):
    """REST calls on behalf of one installation, each returning plain data: those on pull requests and issues
    (``app/github/pulls.py``, ``app/github/issues.py``), and these on the repository, its contents, its git data
    and its Actions."""

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

    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> int | None:
        """``workflow_dispatch`` (at most 25 inputs); with ``return_run_details`` GitHub says the run id."""
        body = {"ref": ref, "inputs": inputs, "return_run_details": True}
        data = self.call("POST", f"/repos/{repo}/actions/workflows/{workflow}/dispatches", json=body)
        run_id = data.get("workflow_run_id") if isinstance(data, dict) else None
        return run_id if isinstance(run_id, int) else None

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
