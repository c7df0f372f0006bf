"""A stand-in for GitHub's REST API, in memory, behind an httpx transport: refs with fast-forward checks,
commits, trees with inline contents, raw file contents, permissions, comments, workflow dispatches.

Every request is recorded and checked against GitHub's OpenAPI description; faults can be injected
(a status for the next N calls of a route, with headers such as ``retry-after``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import respx

from app.store.layout import V1, layout_path, logical, placed, read_layout, run_of
from tests.github.openapi import problems

Fault = tuple[int, dict[str, str]]
LOST = -2  # the fault of a request GitHub carries out but whose answer is lost (a timeout after the fact)


def sha(data: Any) -> str:
    return hashlib.sha1(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


class FakeGitHub:
    def __init__(self, base: str = "/api/v3") -> None:
        self.base = base
        self.requests: list[httpx.Request] = []
        self.problems: list[str] = []
        self.refs: dict[tuple[str, str], str] = {}
        self.commits: dict[str, dict[str, Any]] = {}
        self.trees: dict[str, dict[str, str]] = {}
        self.blobs: dict[str, str] = {}  # sha -> content made by POST /git/blobs
        self.tree_limit = 100_000  # entries GitHub lists of a tree with ``recursive`` before it says ``truncated``
        self.permissions: dict[tuple[str, str], str] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.dispatches: list[dict[str, Any]] = []
        # each dispatched workflow run's status and times, by id, as GitHub lists them: in progress from its dispatch
        self.job_states: dict[int, dict[str, Any]] = {}
        self.faults: dict[str, list[Fault]] = {}
        self.routes: list[tuple[str, re.Pattern[str], Callable[..., httpx.Response]]] = [
            ("POST", re.compile(r"/app/installations/(\d+)/access_tokens"), self._token),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission"), self._permission),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/git/ref/heads/(.+)"), self._get_ref),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/git/refs"), self._create_ref),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/git/refs/heads/(.+)"), self._update_ref),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/git/commits/(\w+)"), self._get_commit),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/git/commits"), self._create_commit),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/git/trees"), self._create_tree),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/git/trees/(\w+)"), self._get_tree),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/git/blobs"), self._create_blob),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/contents/(.+)"), self._contents),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments"), self._comment),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)"), self._edit_comment),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/actions/workflows/([^/]+)/dispatches"), self._dispatch),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/pulls"), self._create_pull),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/requested_reviewers"), self._reviewers),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/issues"), self._create_issue),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels"), self._add_labels),
            ("DELETE", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels/(.+)"), self._remove_label),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/dispatches"), self._repository_dispatch),
            ("POST", re.compile(r"/api/graphql|/graphql"), self._graphql),
            ("GET", re.compile(r"/app/hook/deliveries"), self._deliveries),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/actions/runs"), self._workflow_runs),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews/(\d+)/comments"), self._review_comments),
            ("POST", re.compile(r"/app/hook/deliveries/(\d+)/attempts"), self._redeliver),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments"), self._list_comments),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels"), self._list_labels),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls"), self._list_pulls),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)"), self._get_pull),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)"), self._edit_pull),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/requested_reviewers"), self._get_reviewers),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews"), self._list_reviews),
            ("GET", re.compile(r"/app"), self._app),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/installation"), self._installation),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)"), self._repository),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/labels/([^/]+)"), self._label),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/actions/runners"), self._runners),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/issues"), self._list_issues),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/check-runs"), self._create_check),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/check-runs/(\d+)"), self._update_check),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/commits/(.+)/check-runs"), self._list_checks),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)"), self._get_issue),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)"), self._edit_issue),
            ("GET", re.compile(r"/user"), self._user),
            ("GET", re.compile(r"/user/installations"), self._user_installations),
            ("GET", re.compile(r"/user/installations/(\d+)/repositories"), self._user_repositories),
        ]
        self.check_runs: dict[int, dict[str, Any]] = {}  # every check run made, by id: its head, status, output
        self.checks_made = 0
        self.commit_refusals: list[tuple[str, str]] = []  # createCommitOnBranch's next answers: GraphQL errors
        self.pinned: list[tuple[str, int]] = []  # (repo, issue) pinned with GraphQL's pinIssue
        self.pin_refusal: str | None = None  # what pinIssue answers as its error, e.g. three issues pinned already
        # github.com's own pages of the OAuth web flow: not REST, so outside the OpenAPI check (``web_routes``)
        self.web_routes: dict[tuple[str, str], Callable[[httpx.Request], httpx.Response]] = {
            ("GET", "/login/oauth/authorize"): self._authorize,
            ("POST", "/login/oauth/access_token"): self._access_token,
        }
        self.oauth_client = ("Iv1.board", "board-client-secret")  # the App's OAuth client id and secret
        self.oauth_login: str | None = None  # who is signed in to GitHub in the browser; authorize signs them in
        self.user_repos: dict[str, dict[int, list[str]]] = {}  # login -> installation id -> repositories they see
        self.oauth_codes: dict[str, str] = {}  # code -> login, each used once
        self.user_tokens: dict[str, str] = {}  # user-to-server token -> login
        self.hook_deliveries: list[dict[str, Any]] = []
        self.labels: dict[tuple[str, int], list[str]] = {}
        self.review_notes: dict[int, list[dict[str, Any]]] = {}
        self.redelivered: list[int] = []
        self.pulls: dict[int, dict[str, Any]] = {}
        self.reviews: dict[int, list[str]] = {}  # who reviewed a pull request
        self.issues: list[dict[str, Any]] = []  # every issue the App made, with its number in its repository
        # repository -> the number its first made issue takes: the tests' runs start from octo/app's issues with
        # small numbers, which a made issue (the board issue) must not take, as on GitHub
        self.issue_numbers_from: dict[str, int] = {"octo/app": 1001}
        self.events: list[dict[str, Any]] = []
        # what `interlock doctor --github` reads: the app, its installation, the repository, labels, runners
        self.app_slug = "interlock-app"
        self.installation: dict[str, Any] | None = {
            "id": 77,
            "app_id": 12345,
            "app_slug": self.app_slug,
            "repository_selection": "selected",
            "permissions": {
                "contents": "write",
                "issues": "write",
                "pull_requests": "write",
                "actions": "write",
                "checks": "write",
                "metadata": "read",
            },
            "events": ["issues", "issue_comment", "pull_request", "pull_request_review", "workflow_run", "check_run"],
            "suspended_at": None,
        }
        self.default_branch = "main"
        self.repo_labels: set[str] = set()
        self.runners: list[dict[str, Any]] | None = None  # None: the app may not list them (403)
        self.unreadable: set[str] = set()  # repositories the installation cannot see: GitHub answers 404
        # owner -> the id of that account's installation of the App: a token of another installation gets 404 on
        # its repositories, as on GitHub; empty: every token reaches every repository (one installation)
        self.accounts: dict[str, int] = {}
        self.rate_limit = 5000  # GitHub's hourly REST quota of an installation (GraphQL: its own, as large)
        self.rate_left: dict[tuple[str, str], int] = {}  # (installation id or "app", resource) -> left

    # -- set-up -------------------------------------------------------------------------------------
    def transport(self) -> httpx.MockTransport:
        """An httpx transport whose requests a respx router hands to this stand-in (``self.router.calls``
        records them too)."""
        self.router = respx.Router(base_url="http://github.test", assert_all_called=False)
        self.router.route().mock(side_effect=self.handle_rated)
        return httpx.MockTransport(self.router.handler)

    def seed_branch(self, repo: str, branch: str, files: dict[str, str]) -> str:
        tree = self._store_tree(dict(files))
        commit = self._store_commit(tree, [], "seed")
        self.refs[(repo, branch)] = commit
        return commit

    def fail(
        self,
        method: str,
        path_part: str,
        status: int,
        times: int = 1,
        headers: dict[str, str] | None = None,
        after: int = 0,
    ) -> None:
        """Answer ``status`` to the next ``times`` matching requests, once ``after`` of them went through; ``0``
        times out before GitHub acts, ``LOST`` after it acted (the answer is lost)."""
        queue = self.faults.setdefault(f"{method} {path_part}", [])
        queue.extend([(-1, {})] * after + [(status, headers or {})] * times)

    def files_at(self, repo: str, branch: str) -> dict[str, str]:
        return self.trees[self.commits[self.refs[(repo, branch)]]["tree"]]

    def logical_files(self, repo: str, branch: str) -> dict[str, str]:
        """``files_at`` by logical path (``app/store/layout.py``): where either journal layout puts a file."""
        return {logical(path): text for path, text in self.files_at(repo, branch).items()}

    def calls(self, method: str | None = None) -> list[str]:
        return [
            f"{r.method} {r.url.path.removeprefix(self.base)}"
            for r in self.requests
            if (method is None or r.method == method) and not r.url.path.endswith("/access_tokens")
        ]

    # -- dispatch -----------------------------------------------------------------------------------
    def handle_rated(self, request: httpx.Request) -> httpx.Response:
        """``handle``, with GitHub's ``x-ratelimit-*`` headers: each installation's token (and the App's JWT)
        has its own count per resource, one less at every request; headers an injected fault set stay."""
        response = self.handle(request)
        auth = request.headers.get("authorization", "")
        who = auth.rsplit("ghs_", 1)[1] if "ghs_" in auth else "app"
        resource = "graphql" if request.url.path.endswith("/graphql") else "core"
        left = self.rate_left[(who, resource)] = max(self.rate_left.get((who, resource), self.rate_limit) - 1, 0)
        reset = int((datetime.now(UTC) + timedelta(hours=1)).timestamp())
        rated = {"limit": self.rate_limit, "remaining": left, "used": self.rate_limit - left, "reset": reset}
        for name, value in [*rated.items(), ("resource", resource)]:
            response.headers.setdefault(f"x-ratelimit-{name}", str(value))
        return response

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        web = self.web_routes.get((request.method, request.url.path))
        if web is not None:
            return web(request)
        path = request.url.path.removeprefix(self.base)
        if not path.endswith("/graphql"):
            self.problems += problems(request, self.base)
        where = path + mutation_of(request)  # a fault can name a GraphQL mutation: "POST createCommitOnBranch"
        for key, queue in self.faults.items():
            method, part = key.split(" ", 1)
            if queue and request.method == method and part in where:
                status, headers = queue.pop(0)
                if status == -1:  # let this one through
                    break
                if status == LOST:  # GitHub does it, and its answer never comes back
                    self._route(request, path)
                    raise httpx.ReadTimeout("injected lost answer", request=request)
                if status == 0:
                    raise httpx.ReadTimeout("injected timeout", request=request)
                return httpx.Response(status, headers=headers, json={"message": f"injected {status}"})
        return self._route(request, path)

    def _route(self, request: httpx.Request, path: str) -> httpx.Response:
        if any(path == f"/repos/{repo}" or path.startswith(f"/repos/{repo}/") for repo in self.unreadable):
            return httpx.Response(404, json={"message": "Not Found"})
        if self._other_account(request, path):
            return httpx.Response(404, json={"message": "Not Found"})
        for method, pattern, handler in self.routes:
            match = pattern.fullmatch(path)
            if match and request.method == method:
                body = json.loads(request.content) if request.content else {}
                return handler(request, body, *match.groups())
        return httpx.Response(404, json={"message": "Not Found"})

    # -- the OAuth web flow and the user-to-server API --------------------------------------------------
    def _authorize(self, request: httpx.Request) -> httpx.Response:
        """GitHub's authorize page, already approved: back to ``redirect_uri`` with a code for ``oauth_login``."""
        params = request.url.params
        if params.get("client_id") != self.oauth_client[0] or not params.get("redirect_uri"):
            return httpx.Response(404, text="unknown OAuth client")
        if self.oauth_login is None:
            return httpx.Response(401, text="nobody is signed in to GitHub")
        code = f"code-{len(self.oauth_codes) + 1}"
        self.oauth_codes[code] = self.oauth_login
        back = httpx.URL(params["redirect_uri"]).copy_merge_params({"code": code, "state": params.get("state", "")})
        return httpx.Response(302, headers={"location": str(back)})

    def _access_token(self, request: httpx.Request) -> httpx.Response:
        form = httpx.QueryParams(request.content.decode())
        if (form.get("client_id"), form.get("client_secret")) != self.oauth_client:
            return httpx.Response(200, json={"error": "incorrect_client_credentials"})
        login = self.oauth_codes.pop(form.get("code", ""), None)  # a code is good once, as on GitHub
        if login is None:
            return httpx.Response(200, json={"error": "bad_verification_code"})
        token = f"ghu_{len(self.user_tokens) + 1:04d}"
        self.user_tokens[token] = login
        return httpx.Response(200, json={"access_token": token, "token_type": "bearer", "scope": ""})

    def _user_of(self, request: httpx.Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return self.user_tokens.get(token) if scheme.lower() in ("bearer", "token") else None

    def _user(self, request: httpx.Request, body: Any) -> httpx.Response:
        login = self._user_of(request)
        if login is None:
            return httpx.Response(401, json={"message": "Requires authentication"})
        return httpx.Response(200, json={"login": login, "id": 1, "type": "User"})

    def _user_installations(self, request: httpx.Request, body: Any) -> httpx.Response:
        login = self._user_of(request)
        if login is None:
            return httpx.Response(401, json={"message": "Requires authentication"})
        found = [{"id": inst, "app_slug": self.app_slug} for inst in sorted(self.user_repos.get(login, {}))]
        return httpx.Response(200, json={"total_count": len(found), "installations": self._page(request, found)})

    def _user_repositories(self, request: httpx.Request, body: Any, installation: str) -> httpx.Response:
        login = self._user_of(request)
        seen = self.user_repos.get(login or "", {})
        if login is None or int(installation) not in seen:
            return httpx.Response(404 if login else 401, json={"message": "Not Found"})
        found = [{"full_name": name, "default_branch": self.default_branch} for name in seen[int(installation)]]
        return httpx.Response(200, json={"total_count": len(found), "repositories": self._page(request, found)})

    # -- handlers -----------------------------------------------------------------------------------
    def _token(self, request: httpx.Request, body: Any, installation: str) -> httpx.Response:
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return httpx.Response(201, json={"token": f"ghs_{installation}", "expires_at": expires, "permissions": {}})

    def _permission(self, request: httpx.Request, body: Any, repo: str, user: str) -> httpx.Response:
        level = self.permissions.get((repo, user))
        if level is None:
            return httpx.Response(404, json={"message": "Not Found"})
        # as GitHub answers: `permission` knows only admin, write, read and none; the role says triage or maintain
        legacy = {"maintain": "write", "triage": "read"}.get(level, level)
        return httpx.Response(200, json={"permission": legacy, "role_name": level, "user": {"login": user}})

    def _get_ref(self, request: httpx.Request, body: Any, repo: str, branch: str) -> httpx.Response:
        head = self.refs.get((repo, branch))
        if head is None:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(200, json={"ref": f"refs/heads/{branch}", "object": {"sha": head, "type": "commit"}})

    def _create_ref(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        branch = body["ref"].removeprefix("refs/heads/")
        if (repo, branch) in self.refs:
            return httpx.Response(422, json={"message": "Reference already exists"})
        self.refs[(repo, branch)] = body["sha"]
        return httpx.Response(201, json={"ref": body["ref"], "object": {"sha": body["sha"]}})

    def _update_ref(self, request: httpx.Request, body: Any, repo: str, branch: str) -> httpx.Response:
        current = self.refs.get((repo, branch))
        if current is None:
            return httpx.Response(422, json={"message": "Reference does not exist"})
        if not body.get("force") and not self._descends(body["sha"], current):
            return httpx.Response(422, json={"message": "Update is not a fast forward"})
        self.refs[(repo, branch)] = body["sha"]
        return httpx.Response(200, json={"ref": f"refs/heads/{branch}", "object": {"sha": body["sha"]}})

    def _descends(self, commit: str, ancestor: str) -> bool:
        todo = [commit]
        while todo:
            current = todo.pop()
            if current == ancestor:
                return True
            todo += self.commits.get(current, {}).get("parents", [])
        return False

    def _get_commit(self, request: httpx.Request, body: Any, repo: str, commit: str) -> httpx.Response:
        found = self.commits.get(commit)
        if found is None:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(
            200, json={"sha": commit, "tree": {"sha": found["tree"]}, "parents": [{"sha": p} for p in found["parents"]]}
        )

    def _create_commit(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        commit = self._store_commit(body["tree"], body.get("parents", []), body["message"])
        return httpx.Response(201, json={"sha": commit, "tree": {"sha": body["tree"]}})

    def _create_tree(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        """An entry gives its ``content`` inline, or the ``sha`` of a blob made before (``_create_blob``) or listed
        (``_get_tree``); ``"sha": null`` deletes the path, as on GitHub."""
        files = dict(self.trees.get(body.get("base_tree", ""), {}))
        for entry in body["tree"]:
            if "sha" in entry and entry["sha"] is None:
                if files.pop(entry["path"], None) is None:
                    return httpx.Response(422, json={"message": f"tree.path {entry['path']} does not exist"})
                continue
            if "sha" in entry and entry["sha"] not in self.blobs:
                return httpx.Response(422, json={"message": "tree.sha is not a valid blob"})
            files[entry["path"]] = entry["content"] if "content" in entry else self.blobs[entry["sha"]]
        return httpx.Response(201, json={"sha": self._store_tree(files)})

    def _get_tree(self, request: httpx.Request, body: Any, repo: str, tree: str) -> httpx.Response:
        """A root tree listed as GitHub lists it with ``recursive``: every blob with its sha (kept, so a tree made
        later can name it) and every folder; ``tree_limit`` entries at most, then ``truncated``."""
        if tree not in self.trees or request.url.params.get("recursive") is None:
            return httpx.Response(404, json={"message": "Not Found"})
        entries: list[dict[str, Any]] = []
        folders: set[str] = set()
        for path, text in sorted(self.trees[tree].items()):
            blob = sha({"blob": text})
            self.blobs[blob] = text
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
            entries.append({"path": path, "mode": "100644", "type": "blob", "sha": blob, "size": len(text)})
        entries += [{"path": name, "mode": "040000", "type": "tree", "sha": sha(name)} for name in sorted(folders)]
        cut = len(entries) > self.tree_limit
        return httpx.Response(200, json={"sha": tree, "tree": entries[: self.tree_limit], "truncated": cut})

    def _create_blob(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        """A blob of ``content`` in ``encoding`` (utf-8 or base64); the fake keeps files as text, bytes that are not
        UTF-8 as surrogate escapes (``blob_bytes`` gives them back)."""
        raw = (
            body["content"].encode() if body.get("encoding", "utf-8") == "utf-8" else base64.b64decode(body["content"])
        )
        blob = sha({"blob": body["content"]})
        self.blobs[blob] = raw.decode("utf-8", "surrogateescape")
        return httpx.Response(201, json={"sha": blob, "url": f"https://api.github.com/repos/{repo}/git/blobs/{blob}"})

    def _contents(self, request: httpx.Request, body: Any, repo: str, path: str) -> httpx.Response:
        ref = request.url.params.get("ref", "main")
        commit = ref if ref in self.commits else self.refs.get((repo, ref))
        files = self.trees.get(self.commits[commit]["tree"], {}) if commit in self.commits else {}
        if path not in files:
            return self._folder(files, path)
        if "raw" in request.headers.get("accept", ""):
            return httpx.Response(200, content=files[path].encode())
        content = base64.b64encode(files[path].encode()).decode()
        return httpx.Response(200, json={"type": "file", "encoding": "base64", "content": content})

    def _folder(self, files: dict[str, str], path: str) -> httpx.Response:
        """A folder's listing, as GitHub gives it: one entry per file or subfolder directly inside."""
        prefix = path.rstrip("/") + "/"
        entries: dict[str, str] = {}
        for name in files:
            if name.startswith(prefix):
                head, sep, _ = name.removeprefix(prefix).partition("/")
                entries[head] = "dir" if sep else "file"
        if not entries:
            return httpx.Response(404, json={"message": "Not Found"})
        listing = [{"type": kind, "name": name, "path": prefix + name} for name, kind in sorted(entries.items())]
        return httpx.Response(200, json=listing)

    def _comment(self, request: httpx.Request, body: Any, repo: str, issue: str) -> httpx.Response:
        if len(body["body"]) > BODY_LIMIT:
            return too_long()
        comment_id = 1000 + len(self.comments)
        now = f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"
        author = self._user_of(request) or f"{self.app_slug}[bot]"  # an installation's token posts as the App's bot
        made = {"repo": repo, "issue": int(issue), "body": body["body"], "user": author, "updated_at": now}
        self.comments[comment_id] = made
        return httpx.Response(201, json={"id": comment_id, "body": body["body"]})

    def _edit_comment(self, request: httpx.Request, body: Any, repo: str, comment_id: str) -> httpx.Response:
        if len(body["body"]) > BODY_LIMIT:
            return too_long()
        self.comments[int(comment_id)].update(body=body["body"], updated_at=f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}")
        return httpx.Response(200, json={"id": int(comment_id), "body": body["body"]})

    def _dispatch(self, request: httpx.Request, body: Any, repo: str, workflow: str) -> httpx.Response:
        self.dispatches.append({"repo": repo, "workflow": workflow, **body})
        run_id = 5000 + len(self.dispatches)
        now = f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"
        self.job_states[run_id] = {"status": "in_progress", "created_at": now, "run_started_at": now}
        if body.get("return_run_details"):
            return httpx.Response(
                200,
                json={
                    "workflow_run_id": run_id,
                    "run_url": f"https://api/runs/{run_id}",
                    "html_url": f"https://github.com/{repo}/actions/runs/{run_id}",
                },
            )
        return httpx.Response(204)

    def _create_pull(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        if (repo, body["head"]) not in self.refs or (repo, body["base"]) not in self.refs:
            return httpx.Response(422, json={"message": "Validation Failed"})
        if self.refs[(repo, body["head"])] == self.refs[(repo, body["base"])]:
            return httpx.Response(422, json={"message": "No commits between base and head"})
        if any((p["repo"], p["head"], p["state"]) == (repo, body["head"], "open") for p in self.pulls.values()):
            owner = repo.split("/")[0]
            message = f"A pull request already exists for {owner}:{body['head']}."
            error = {"resource": "PullRequest", "code": "custom", "message": message}
            return httpx.Response(422, json={"message": "Validation Failed", "errors": [error]})
        number = 100 + len(self.pulls)
        self.pulls[number] = {**body, "repo": repo, "reviewers": [], "node_id": f"PR_{number}", "state": "open"}
        return httpx.Response(201, json={"number": number, "node_id": f"PR_{number}", "draft": body.get("draft")})

    def _reviewers(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        self.pulls[int(number)]["reviewers"] += body.get("reviewers", [])
        return httpx.Response(201, json={"number": int(number)})

    def _create_issue(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        number = max((i["number"] for i in self.issues if i["repo"] == repo), default=self.first_issue(repo) - 1) + 1
        self.issues.append({"repo": repo, **body, "number": number})
        self.labels[(repo, number)] = list(body.get("labels") or [])  # labels named at creation are on it at once
        url = f"https://github.com/{repo}/issues/{number}"
        return httpx.Response(201, json={"number": number, "html_url": url, "node_id": f"I_{len(self.issues)}"})

    @property
    def filed(self) -> list[dict[str, Any]]:
        """The issues made but the board issues (labelled ``interlock:board``): the requests and supervision
        issues, in the order they were made."""
        return [i for i in self.issues if "interlock:board" not in self.labels.get((i["repo"], i["number"]), [])]

    def created_issue(self, repo: str, number: int) -> dict[str, Any] | None:
        """The issue the App created as ``number`` in ``repo``, if it did."""
        found = (i for i in self.issues if (i["repo"], i["number"]) == (repo, number) and not i.get("deleted"))
        return next(found, None)

    def delete_issue(self, repo: str, number: int) -> None:
        """As an admin deletes an issue: GitHub answers 404 for it and never gives its number again."""
        issue = self.created_issue(repo, number)
        assert issue is not None, (repo, number)
        issue["deleted"] = True

    def first_issue(self, repo: str) -> int:
        """GitHub numbers a repository's issues and pull requests together: in a repository whose issues the
        recorded payloads name (``issue_numbers_from``), a made issue comes after them and never takes their number."""
        return self.issue_numbers_from.get(repo, 1)

    def _get_issue(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        issue = self.created_issue(repo, int(number))
        if issue is None:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(200, json={"number": int(number), "title": issue["title"], "body": issue.get("body")})

    def _edit_issue(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        issue = self.created_issue(repo, int(number))
        if issue is None:
            return httpx.Response(404, json={"message": "Not Found"})
        if len(body.get("body") or "") > BODY_LIMIT:
            return too_long()
        issue.update({key: body[key] for key in ("title", "body") if key in body})
        return httpx.Response(
            200, json={"number": int(number), "body": issue.get("body"), "state": issue.get("state", "open")}
        )

    def _list_issues(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        """The repository's issues carrying every label of ``labels``, newest first, as GitHub lists them."""
        wanted = [name for name in request.url.params.get("labels", "").split(",") if name]
        found = [
            {
                "number": number,
                "title": issue["title"],
                "body": issue.get("body") or "",
                "state": "open",
                "labels": [{"name": name} for name in self.labels.get((repo, number), [])],
                "user": {"login": f"{self.app_slug}[bot]", "type": "Bot"},  # every issue made here is the App's
                "html_url": f"https://github.com/{repo}/issues/{number}",
            }
            for number, issue in ((issue["number"], issue) for issue in self.issues if not issue.get("deleted"))
            if issue["repo"] == repo and all(name in self.labels.get((repo, number), []) for name in wanted)
        ]
        return httpx.Response(200, json=found[::-1])

    def _repository_dispatch(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        self.events.append({"repo": repo, **body})
        return httpx.Response(204)

    def _graphql(self, request: httpx.Request, body: Any) -> httpx.Response:
        if "InterlockSnapshot" in body.get("query", ""):
            return self._snapshot(body["variables"])
        if "InterlockBranchChecks" in body.get("query", ""):
            return self._branch_checks(body["variables"])
        if "markPullRequestReadyForReview" in body.get("query", ""):
            node = body["variables"]["id"]
            for pull in self.pulls.values():
                if pull["node_id"] == node:
                    pull["draft"] = False
            return httpx.Response(200, json={"data": {"markPullRequestReadyForReview": {"clientMutationId": None}}})
        if "pinIssue" in body.get("query", ""):
            return self._pin(body["variables"]["id"])
        if "createCommitOnBranch" in body.get("query", ""):
            return self._commit_on_branch(body["variables"]["input"])
        if "InterlockMoveCheck" in body.get("query", ""):
            return self._move_check(body["variables"])
        return httpx.Response(200, json={"errors": [{"message": "unsupported query"}]})

    def _commit_on_branch(self, given: dict[str, Any]) -> httpx.Response:
        """GraphQL's ``createCommitOnBranch`` as GitHub answers it: the branch must exist and still point at
        ``expectedHeadOid`` (else 200 with ``STALE_DATA``), contents are base64, a deletion of a file that is not
        there is refused; the new commit's parent is the expected head. ``commit_refusals`` (type, message) are
        answered first, one a request."""
        if self.commit_refusals:
            return graphql_error(*self.commit_refusals.pop(0))
        repo, branch = given["branch"]["repositoryNameWithOwner"], given["branch"]["branchName"]
        head, expected = self.refs.get((repo, branch)), given["expectedHeadOid"]
        if head is None:
            return graphql_error("NOT_FOUND", f'A ref named "refs/heads/{branch}" does not exist.')
        if head != expected:
            return graphql_error(
                "STALE_DATA", f'Expected branch to point to "{expected}" but it did not.  Pull and try again.'
            )
        files = dict(self.trees[self.commits[head]["tree"]])
        changes = given.get("fileChanges") or {}
        for gone in changes.get("deletions") or []:
            if files.pop(gone["path"], None) is None:
                return graphql_error(
                    "UNPROCESSABLE", f"A path was requested for deletion which does not exist as of commit oid `{head}`"
                )
        for added in changes.get("additions") or []:
            files[added["path"]] = base64.b64decode(added["contents"], validate=True).decode("utf-8")
        message = given["message"]["headline"] + (
            f"\n\n{given['message']['body']}" if given["message"].get("body") else ""
        )
        commit = self._store_commit(self._store_tree(files), [head], message)
        if not self._swap_ref(repo, branch, commit, head):
            return graphql_error(
                "STALE_DATA", f'Expected branch to point to "{expected}" but it did not.  Pull and try again.'
            )
        return httpx.Response(200, json={"data": {"createCommitOnBranch": {"commit": {"oid": commit}}}})

    def _move_check(self, variables: dict[str, Any]) -> httpx.Response:
        """GraphQL's ``createCheckRun`` then ``updateCheckRun`` in one request, as GitHub runs them: in order, each
        answered on its own (a failed one is ``null`` with its error, the other still done). Inputs are checked
        against GitHub's schema: a field the input type lacks, or an enum value it lacks, refuses the request."""
        if problem := graphql_input_problem(variables):
            return httpx.Response(200, json={"errors": [{"message": problem}]})
        data: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        for alias, answer in (("made", self._graphql_create_check), ("left", self._graphql_update_check)):
            result = answer(variables[alias])
            if isinstance(result, str):
                data[alias] = None
                errors.append({"type": "UNPROCESSABLE", "path": [alias], "message": result})
            else:
                data[alias] = {"checkRun": {"databaseId": result, "id": f"CR_{result}"}}
        return httpx.Response(200, json={"data": data, **({"errors": errors} if errors else {})})

    def _graphql_create_check(self, given: dict[str, Any]) -> int | str:
        repo = self.repo_of_node(given["repositoryId"])
        if repo is None:
            return f"Could not resolve to a node with the global id of '{given['repositoryId']}'"
        body = {"name": given["name"], "head_sha": given["headSha"], "external_id": given.get("externalId")}
        answer = self._create_check(httpx.Request("POST", "/"), body | rest_check_fields(given), repo)
        return int(answer.json()["id"]) if answer.status_code == 201 else str(answer.json())

    def _graphql_update_check(self, given: dict[str, Any]) -> int | str:
        repo, node = self.repo_of_node(given["repositoryId"]), str(given["checkRunId"])
        if repo is None or not node.startswith("CR_") or not node[3:].isdigit():
            return f"Could not resolve to a node with the global id of '{node}'"
        answer = self._update_check(httpx.Request("PATCH", "/"), rest_check_fields(given), repo, node[3:])
        return int(node[3:]) if answer.status_code == 200 else str(answer.json())

    def repo_of_node(self, node: str) -> str | None:
        """The repository a node id names (``repo_node``), if the fake has seen it."""
        known = {repo_node(repo): repo for repo, _ in self.refs}
        return known.get(node)

    def _swap_ref(self, repo: str, branch: str, new: str, old: str) -> bool:
        """Move the branch to ``new`` if it is still at ``old``."""
        if self.refs.get((repo, branch)) != old:
            return False
        self.refs[(repo, branch)] = new
        return True

    def _pin(self, node: str) -> httpx.Response:
        """GraphQL's ``pinIssue``: an error, as GitHub gives it, when ``pin_refusal`` says so (three are pinned)."""
        made = int(node.removeprefix("I_")) if node.startswith("I_") and node[2:].isdigit() else 0
        pinned = self.issues[made - 1] if 0 < made <= len(self.issues) else None
        if self.pin_refusal is not None or pinned is None:
            message = self.pin_refusal or f"Could not resolve to a node with the global id of '{node}'"
            return httpx.Response(200, json={"data": {"pinIssue": None}, "errors": [{"message": message}]})
        self.pinned.append((pinned["repo"], pinned["number"]))
        return httpx.Response(200, json={"data": {"pinIssue": {"issue": {"number": pinned["number"]}}}})

    def _snapshot(self, variables: dict[str, Any]) -> httpx.Response:
        repo = f"{variables['owner']}/{variables['name']}"
        head = self.refs.get((repo, variables["ref"].removeprefix("refs/heads/")))
        if head is None:
            return httpx.Response(200, json={"data": {"repository": {"ref": None}}})
        tree = self.commits[head]["tree"]
        target: dict[str, Any] = {"oid": head, "tree": {"oid": tree}}
        for name, path in variables.items():
            if name.startswith("p") and name[1:].isdigit():
                text = self.trees[tree].get(path)
                target[f"f{name[1:]}"] = None if text is None else {"object": {"text": text, "isTruncated": False}}
        found: dict[str, Any] = {"id": repo_node(repo), "ref": {"target": target}}
        for name, ref in variables.items():  # other branches' heads read in the same call
            if name.startswith("h") and name[1:].isdigit():
                other = self.refs.get((repo, ref.removeprefix("refs/heads/")))
                found[name] = {"target": {"oid": other}} if other else None
        return httpx.Response(200, json={"data": {"repository": found}})

    def _add_labels(self, request: httpx.Request, body: Any, repo: str, issue: str) -> httpx.Response:
        current = self.labels.setdefault((repo, int(issue)), [])
        current += [label for label in body["labels"] if label not in current]
        return httpx.Response(200, json=[{"name": label} for label in current])

    def _remove_label(self, request: httpx.Request, body: Any, repo: str, issue: str, label: str) -> httpx.Response:
        current = self.labels.get((repo, int(issue)), [])
        if label not in current:
            return httpx.Response(404, json={"message": "Label does not exist"})
        current.remove(label)
        return httpx.Response(200, json=[{"name": name} for name in current])

    def _review_comments(
        self, request: httpx.Request, body: Any, repo: str, number: str, review: str
    ) -> httpx.Response:
        return httpx.Response(200, json=self.review_notes.get(int(review), []))

    def job_ended(self, run_id: str, seq: int, status: str = "completed") -> None:
        """The workflow runs of mission ``seq`` of run ``run_id`` end (or take ``status``), as GitHub says it."""
        for index, dispatched in enumerate(self.dispatches):
            inputs = dispatched.get("inputs", {})
            if inputs.get("run") == run_id and inputs.get("mission") == str(seq):
                self.job_states.setdefault(5001 + index, {})["status"] = status

    def _workflow_runs(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        branch = request.url.params.get("branch")
        runs = [
            {
                "id": 5001 + i,
                "head_branch": d["ref"],
                "event": "workflow_dispatch",
                "display_title": f"interlock {d['inputs']['run']} mission {d['inputs']['mission']} "
                f"({d['inputs'].get('stage', '?')})",
                **self.job_states.get(5001 + i, {}),
            }
            for i, d in enumerate(self.dispatches)
            if d["repo"] == repo and d["ref"] == branch
        ]
        return httpx.Response(200, json={"total_count": len(runs), "workflow_runs": runs[::-1]})

    def _deliveries(self, request: httpx.Request, body: Any) -> httpx.Response:
        cursor = int(request.url.params.get("cursor", "0"))
        size = int(request.url.params.get("per_page", "30"))
        page = self.hook_deliveries[cursor : cursor + size]
        headers = {}
        if cursor + size < len(self.hook_deliveries):
            origin = f"{request.url.scheme}://{request.url.host}"
            headers["link"] = (
                f'<{origin}{self.base}/app/hook/deliveries?per_page={size}&cursor={cursor + size}>; rel="next"'
            )
        return httpx.Response(200, json=page, headers=headers)

    def _redeliver(self, request: httpx.Request, body: Any, delivery_id: str) -> httpx.Response:
        self.redelivered.append(int(delivery_id))
        return httpx.Response(202, json={})

    def _list_comments(self, request: httpx.Request, body: Any, repo: str, issue: str) -> httpx.Response:
        after = request.url.params.get("since", "")  # GitHub's: only those updated at or after it
        found = [
            {
                "id": number,
                "body": c["body"],
                "user": {
                    "login": c.get("user", f"{self.app_slug}[bot]"),
                    "type": "Bot" if str(c.get("user", "[bot]")).endswith("[bot]") else "User",
                },
                "updated_at": c.get("updated_at", ""),
            }
            for number, c in sorted(self.comments.items())
            if c["repo"] == repo and c["issue"] == int(issue) and c.get("updated_at", after) >= after
        ]
        return httpx.Response(200, json=self._page(request, found))

    def _list_labels(self, request: httpx.Request, body: Any, repo: str, issue: str) -> httpx.Response:
        return httpx.Response(200, json=[{"name": name} for name in self.labels.get((repo, int(issue)), [])])

    def _pull_json(self, number: int) -> dict[str, Any]:
        pull = self.pulls[number]
        fields = {
            "number": number,
            "node_id": pull["node_id"],
            "draft": bool(pull.get("draft")),
            "state": pull["state"],
        }
        return {**fields, "head": {"ref": pull["head"]}, "base": {"ref": pull["base"]}}

    def _list_pulls(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        head = request.url.params.get("head", "")
        state = request.url.params.get("state", "open")
        found = [
            self._pull_json(number)
            for number, pull in sorted(self.pulls.items())
            if pull["repo"] == repo
            and (not head or f"{repo.split('/')[0]}:{pull['head']}" == head)
            and state in (pull["state"], "all")
        ]
        return httpx.Response(200, json=found)

    def _get_pull(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        if int(number) not in self.pulls:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(200, json=self._pull_json(int(number)))

    def _edit_pull(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        pull = self.pulls.get(int(number))
        if pull is None or pull["repo"] != repo:
            return httpx.Response(404, json={"message": "Not Found"})
        pull.update({key: body[key] for key in ("body", "title") if key in body})
        return httpx.Response(200, json=self._pull_json(int(number)))

    def _get_reviewers(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        users = [{"login": login} for login in self.pulls[int(number)]["reviewers"]]
        return httpx.Response(200, json={"users": users, "teams": []})

    def _list_reviews(self, request: httpx.Request, body: Any, repo: str, number: str) -> httpx.Response:
        return httpx.Response(200, json=[{"user": {"login": login}} for login in self.reviews.get(int(number), [])])

    @staticmethod
    def _page(request: httpx.Request, items: list[Any]) -> list[Any]:
        size = int(request.url.params.get("per_page", "30"))
        page = int(request.url.params.get("page", "1"))
        return items[(page - 1) * size : page * size]

    def _app(self, request: httpx.Request, body: Any) -> httpx.Response:
        return httpx.Response(200, json={"id": 12345, "slug": self.app_slug, "name": "Interlock"})

    def _installation(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        owner = repo.split("/")[0]
        if self.installation is None or (self.accounts and owner not in self.accounts):
            return httpx.Response(404, json={"message": "Not Found"})
        if owner in self.accounts:
            account = {"id": self.accounts[owner], "account": {"login": owner}}
            return httpx.Response(200, json={**self.installation, **account})
        return httpx.Response(200, json=self.installation)

    def _other_account(self, request: httpx.Request, path: str) -> bool:
        """Whether an installation token names another account's installation than ``path``'s repository's."""
        owner = path.split("/")[2] if path.startswith("/repos/") else ""
        auth = request.headers.get("authorization", "")
        if owner not in self.accounts or "ghs_" not in auth:  # the App's JWT asks where it is installed
            return False
        return auth.rsplit("ghs_", 1)[1] != str(self.accounts[owner])

    def _repository(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        return httpx.Response(200, json={"full_name": repo, "default_branch": self.default_branch, "private": True})

    def _label(self, request: httpx.Request, body: Any, repo: str, name: str) -> httpx.Response:
        if name not in self.repo_labels:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(200, json={"name": name, "color": "0e8a16", "default": False})

    def _runners(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        if self.runners is None:
            return httpx.Response(403, json={"message": "Resource not accessible by integration"})
        return httpx.Response(200, json={"total_count": len(self.runners), "runners": self.runners})

    def _create_check(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        if body["head_sha"] not in self.commits:
            return httpx.Response(422, json={"message": "No commit found for SHA: " + body["head_sha"]})
        if problem := check_problem(body):
            return httpx.Response(422, json={"message": "Validation Failed", "errors": [problem]})
        check_id = 9000 + self.checks_made  # GitHub never gives a deleted check's id to another
        self.checks_made += 1
        self.check_runs[check_id] = {"id": check_id, "repo": repo, "conclusion": None, **body}
        return httpx.Response(201, json=self._check_json(check_id))

    def _update_check(self, request: httpx.Request, body: Any, repo: str, check_id: str) -> httpx.Response:
        check = self.check_runs.get(int(check_id))
        if check is None or check["repo"] != repo:
            return httpx.Response(404, json={"message": "Not Found"})
        if problem := check_problem(body):
            return httpx.Response(422, json={"message": "Validation Failed", "errors": [problem]})
        check.update(body)
        if "conclusion" not in body and body.get("status") in ("in_progress", "queued"):
            check["conclusion"] = None
        return httpx.Response(200, json=self._check_json(int(check_id)))

    def _list_checks(self, request: httpx.Request, body: Any, repo: str, ref: str) -> httpx.Response:
        """The check runs of a commit, given by sha or as ``heads/BRANCH``; GitHub answers 404 for neither."""
        head = self.refs.get((repo, ref.removeprefix("heads/"))) if ref.startswith("heads/") else ref
        if head is None or head not in self.commits:
            return httpx.Response(404, json={"message": "No commit found for SHA: " + ref})
        name = request.url.params.get("check_name")
        found = [
            self._check_json(number)
            for number, check in sorted(self.check_runs.items(), reverse=True)
            if check["repo"] == repo and check["head_sha"] == head and name in (None, check["name"])
        ]
        return httpx.Response(200, json={"total_count": len(found), "check_runs": found})

    def _branch_checks(self, variables: dict[str, Any]) -> httpx.Response:
        """A branch's head and its history (newest first, 30 commits), each with its in-progress Interlock checks."""
        repo = f"{variables['owner']}/{variables['name']}"
        head = self.refs.get((repo, variables["ref"].removeprefix("refs/heads/")))
        if head is None:
            return httpx.Response(200, json={"data": {"repository": {"ref": None}}})
        history, queue = [], [head]
        while queue and len(history) < 30:
            commit = queue.pop(0)
            if commit not in history:
                history.append(commit)
                queue += self.commits[commit]["parents"]
        nodes = [
            {"oid": commit, "checkSuites": {"nodes": [{"checkRuns": {"nodes": self._open_checks(repo, commit)}}]}}
            for commit in history
        ]
        target = {"oid": head, "history": {"nodes": nodes}}
        return httpx.Response(200, json={"data": {"repository": {"ref": {"target": target}}}})

    def _open_checks(self, repo: str, commit: str) -> list[dict[str, Any]]:
        return [
            {"databaseId": number, "externalId": check.get("external_id")}
            for number, check in self.check_runs.items()
            if check["repo"] == repo and check["head_sha"] == commit and check["status"] == "in_progress"
        ]

    def _check_json(self, check_id: int) -> dict[str, Any]:
        check = self.check_runs[check_id]
        fields = ("id", "name", "head_sha", "external_id", "status", "conclusion", "details_url", "output")
        found = {key: check.get(key) for key in fields} | {"node_id": f"CR_{check_id}"}
        return found | {"app": {"id": 12345, "slug": self.app_slug}}

    def checks_of(self, run_id: str) -> list[dict[str, Any]]:
        """The check runs Interlock made for a run, oldest first."""
        return [check for _, check in sorted(self.check_runs.items()) if check.get("external_id") == run_id]

    def commit_file(self, repo: str, branch: str, path: str, content: str, as_is: bool = False) -> None:
        """What a job does when it stores its mission record: a new commit on the branch, the logical ``path``
        placed by its run's journal layout at the head (``app/store/layout.py``), unless ``as_is``."""
        head = self.refs[(repo, branch)]
        files = dict(self.trees[self.commits[head]["tree"]])
        run = run_of(path)
        layout = read_layout((files.get(layout_path(run)) or "").encode() or None) if run else V1
        files[path if as_is else placed(path, layout)] = content
        self.refs[(repo, branch)] = self._store_commit(self._store_tree(files), [head], f"job: {path}")

    # -- storage ------------------------------------------------------------------------------------
    def _store_tree(self, files: dict[str, str]) -> str:
        tree = sha(files)
        self.trees[tree] = files
        return tree

    def _store_commit(self, tree: str, parents: list[str], message: str) -> str:
        commit = sha({"tree": tree, "parents": parents, "message": message, "n": len(self.commits)})
        self.commits[commit] = {"tree": tree, "parents": parents, "message": message}
        return commit


BODY_LIMIT = 65536  # GitHub refuses a longer issue or comment body


def check_problem(body: dict[str, Any]) -> dict[str, str] | None:
    """What GitHub refuses in a check run's body: a completed check without its conclusion, more than 3 buttons
    or a button's label, identifier (20) or description (40) too long, a summary over 65,535 characters."""
    if body.get("status") == "completed" and not body.get("conclusion"):
        return {"field": "conclusion", "code": "missing"}
    actions = body.get("actions") or []
    limits = {"label": 20, "identifier": 20, "description": 40}
    if len(actions) > 3 or any(len(a.get(key, "")) > most for a in actions for key, most in limits.items()):
        return {"field": "actions", "code": "invalid"}
    if len((body.get("output") or {}).get("summary") or "") > 65535:
        return {"field": "output.summary", "code": "too_long"}
    return None


class VirtualClock:
    """Time for ``ContentLimiter`` in tests: it moves only when slept on, at once (no test sleeps)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def mutation_of(request: httpx.Request) -> str:
    """``#name`` of the GraphQL mutation a request carries (``""`` for anything else)."""
    if not request.url.path.endswith("/graphql") or not request.content:
        return ""
    body = json.loads(request.content)
    found = re.search(r"mutation[^{]*\{\s*(?:\w+\s*:\s*)?(\w+)", body.get("query", ""))  # past an alias
    if not found:
        return ""
    given = ((body.get("variables") or {}).get("input") or {}).get("branch") or {}
    return f"#{found.group(1)}" + (f"@{given['repositoryNameWithOwner']}" if "repositoryNameWithOwner" in given else "")


def repo_node(repo: str) -> str:
    """The node id the fake gives a repository (GitHub's are opaque strings such as ``R_kgDOABCD``)."""
    return "R_" + base64.b64encode(repo.encode()).decode().rstrip("=")


# The fields of GitHub's GraphQL input types the fake takes, as octokit/graphql-schema (MIT) gives them.
CHECK_INPUTS = {
    "CreateCheckRunInput": {
        "actions",
        "clientMutationId",
        "completedAt",
        "conclusion",
        "detailsUrl",
        "externalId",
        "headSha",
        "name",
        "output",
        "repositoryId",
        "startedAt",
        "status",
    },
    "UpdateCheckRunInput": {
        "actions",
        "checkRunId",
        "clientMutationId",
        "completedAt",
        "conclusion",
        "detailsUrl",
        "externalId",
        "name",
        "output",
        "repositoryId",
        "startedAt",
        "status",
    },
}
REQUIRED_INPUTS = {
    "CreateCheckRunInput": {"headSha", "name", "repositoryId"},
    "UpdateCheckRunInput": {"checkRunId", "repositoryId"},
}
CHECK_STATUS = {"COMPLETED", "IN_PROGRESS", "PENDING", "QUEUED", "WAITING"}  # RequestableCheckStatusState
CHECK_CONCLUSION = {
    "ACTION_REQUIRED",
    "CANCELLED",
    "FAILURE",
    "NEUTRAL",
    "SKIPPED",
    "STALE",
    "STARTUP_FAILURE",
    "SUCCESS",
    "TIMED_OUT",
}  # CheckConclusionState
OUTPUT_FIELDS, ACTION_FIELDS = (
    {"annotations", "images", "summary", "text", "title"},
    {"description", "identifier", "label"},
)


def graphql_input_problem(variables: dict[str, Any]) -> str | None:
    """What GitHub's schema refuses in the move's two inputs, in the words of its error, or ``None``."""
    for name, kind in (("made", "CreateCheckRunInput"), ("left", "UpdateCheckRunInput")):
        given = variables.get(name) or {}
        unknown = set(given) - CHECK_INPUTS[kind]
        unknown |= {f"output.{key}" for key in set(given.get("output") or {}) - OUTPUT_FIELDS}
        unknown |= {f"actions.{key}" for action in given.get("actions") or [] for key in set(action) - ACTION_FIELDS}
        missing = REQUIRED_INPUTS[kind] - set(given)
        bad_enum = (given.get("status") not in CHECK_STATUS | {None}) or (
            given.get("conclusion") not in CHECK_CONCLUSION | {None}
        )
        if unknown or missing or bad_enum or ("output" in given and not {"title", "summary"} <= set(given["output"])):
            what = sorted(unknown) or sorted(missing) or ["status or conclusion"]
            return f"Variable ${name} of type {kind}! was provided invalid value for {', '.join(what)}"
    return None


def rest_check_fields(given: dict[str, Any]) -> dict[str, Any]:
    """A GraphQL check input's fields as the REST body names them (the fake keeps checks as REST shows them)."""
    fields: dict[str, Any] = {"status": str(given.get("status", "QUEUED")).lower()}
    if given.get("conclusion"):
        fields["conclusion"] = str(given["conclusion"]).lower()
    if "detailsUrl" in given:
        fields["details_url"] = given["detailsUrl"]
    for key in ("output", "actions"):
        if key in given:
            fields[key] = given[key]
    return fields


def graphql_error(kind: str, message: str) -> httpx.Response:
    """A refused mutation as GitHub answers it: 200, no data for it, the error with its type and path."""
    error = {
        "type": kind,
        "path": ["createCommitOnBranch"],
        "locations": [{"line": 1, "column": 70}],
        "message": message,
    }
    return httpx.Response(200, json={"data": {"createCommitOnBranch": None}, "errors": [error]})


def too_long() -> httpx.Response:
    errors = [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long"}]
    return httpx.Response(422, json={"message": "Validation Failed", "errors": errors})
