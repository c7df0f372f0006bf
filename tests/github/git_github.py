"""The GitHub stand-in backed by a real bare git repository, served over HTTP on loopback.

The REST routes are ``FakeGitHub``'s (requests checked against GitHub's OpenAPI description); refs, commits
and trees are the bare repository's own, so the service's git data API calls and a job's ``git push`` see
the same branches — as on GitHub. One repository is served, whatever ``owner/name`` a request names.
"""

from __future__ import annotations

import subprocess
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping, MutableMapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pygit2
import yaml

from tests.github.fake_github import FakeGitHub

SIGNATURE = pygit2.Signature("GitHub", "noreply@github.com")


class GitRefs(MutableMapping[tuple[str, str], str]):
    def __init__(self, repo: pygit2.Repository, name: str) -> None:
        self.repo, self.name = repo, name

    def __getitem__(self, key: tuple[str, str]) -> str:
        ref = self.repo.references.get(f"refs/heads/{key[1]}")
        if ref is None:
            raise KeyError(key)
        return str(ref.target)

    def __setitem__(self, key: tuple[str, str], sha: str) -> None:
        self.repo.references.create(f"refs/heads/{key[1]}", pygit2.Oid(hex=sha), force=True)

    def __delitem__(self, key: tuple[str, str]) -> None:
        self.repo.references.delete(f"refs/heads/{key[1]}")

    def __iter__(self) -> Iterator[tuple[str, str]]:
        heads = [name for name in self.repo.references if name.startswith("refs/heads/")]
        return iter([(self.name, name.removeprefix("refs/heads/")) for name in heads])

    def __len__(self) -> int:
        return len(list(iter(self)))


class GitObjects(Mapping[str, Any]):
    def __init__(self, repo: pygit2.Repository, kind: type) -> None:
        self.repo, self.kind = repo, kind

    def _get(self, sha: str) -> Any:
        try:
            found = self.repo[sha]
        except (KeyError, ValueError, TypeError):
            raise KeyError(sha) from None
        if not isinstance(found, self.kind):
            raise KeyError(sha)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class GitCommits(GitObjects):
    def __init__(self, repo: pygit2.Repository) -> None:
        super().__init__(repo, pygit2.Commit)

    def __getitem__(self, sha: str) -> dict[str, Any]:
        commit = self._get(sha)
        return {"tree": str(commit.tree_id), "parents": [str(p) for p in commit.parent_ids], "message": commit.message}


class GitTrees(GitObjects):
    """A tree as the flat ``path -> text`` the stand-in's handlers read."""

    def __init__(self, repo: pygit2.Repository) -> None:
        super().__init__(repo, pygit2.Tree)

    def __getitem__(self, sha: str) -> dict[str, str]:
        files: dict[str, str] = {}
        self._walk(self._get(sha), "", files)
        return files

    def _walk(self, tree: pygit2.Tree, prefix: str, files: dict[str, str]) -> None:
        for entry in tree:
            item = self.repo[entry.id]
            if isinstance(item, pygit2.Tree):
                self._walk(item, f"{prefix}{entry.name}/", files)
            elif isinstance(item, pygit2.Blob):
                files[f"{prefix}{entry.name}"] = item.data.decode("utf-8", errors="replace")


class GitBackedGitHub(FakeGitHub):
    def __init__(self, bare: Path, name: str) -> None:
        super().__init__()
        self.git = pygit2.Repository(str(bare))
        self.refs = GitRefs(self.git, name)  # type: ignore[assignment]
        self.commits = GitCommits(self.git)  # type: ignore[assignment]
        self.trees = GitTrees(self.git)  # type: ignore[assignment]
        self.lock = threading.Lock()

    def handle(self, request: httpx.Request) -> httpx.Response:
        with self.lock:  # the service and the jobs call at once; GitHub serialises ref updates too
            return super().handle(request)

    def _update_ref(self, request: httpx.Request, body: Any, repo: str, branch: str) -> httpx.Response:
        """A true compare-and-swap, as on GitHub: `git update-ref NEW OLD` takes git's own lock, so a job's
        `git push` racing this update makes one of the two fail instead of losing a commit."""
        current = self.refs.get((repo, branch))
        if current is None:
            return httpx.Response(422, json={"message": "Reference does not exist"})
        if not body.get("force") and not self._descends(body["sha"], current):
            return httpx.Response(422, json={"message": "Update is not a fast forward"})
        swap = ["git", "--git-dir", self.git.path, "update-ref", f"refs/heads/{branch}", body["sha"], current]
        if subprocess.run(swap, capture_output=True).returncode != 0:
            return httpx.Response(422, json={"message": "Update is not a fast forward"})
        return httpx.Response(200, json={"ref": f"refs/heads/{branch}", "object": {"sha": body["sha"]}})

    def _swap_ref(self, repo: str, branch: str, new: str, old: str) -> bool:
        """``createCommitOnBranch``'s compare-and-swap under git's own lock, as ``_update_ref``'s."""
        swap = ["git", "--git-dir", self.git.path, "update-ref", f"refs/heads/{branch}", new, old]
        return subprocess.run(swap, capture_output=True).returncode == 0

    def _dispatch(self, request: httpx.Request, body: Any, repo: str, workflow: str) -> httpx.Response:
        """As GitHub: the workflow must exist on the ref, and declare every input sent (422 otherwise)."""
        head = self.refs.get((repo, body.get("ref", "")))
        files = self.trees[self.commits[head]["tree"]] if head else {}
        text = files.get(f".github/workflows/{workflow}")
        if text is None:
            return httpx.Response(404, json={"message": f"Workflow {workflow} not found on {body.get('ref')}"})
        declared = yaml.safe_load(text)
        spec = (declared.get("on") or declared.get(True) or {}).get("workflow_dispatch") or {}
        unexpected = set(body.get("inputs", {})) - set(spec.get("inputs") or {})
        if unexpected:
            return httpx.Response(422, json={"message": f"Unexpected inputs provided: {sorted(unexpected)}"})
        return super()._dispatch(request, body, repo, workflow)

    def _store_tree(self, files: dict[str, str]) -> str:
        return str(self._build(files))

    def _build(self, files: dict[str, str]) -> pygit2.Oid:
        builder = self.git.TreeBuilder()
        folders: dict[str, dict[str, str]] = defaultdict(dict)
        for path, text in files.items():
            head, sep, rest = path.partition("/")
            if sep:
                folders[head][rest] = text
            else:
                builder.insert(head, self.git.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
        for name, inner in folders.items():
            builder.insert(name, self._build(inner), pygit2.enums.FileMode.TREE)
        return builder.write()

    def _store_commit(self, tree: str, parents: list[str], message: str) -> str:
        oids = [pygit2.Oid(hex=p) for p in parents]
        return str(self.git.create_commit(None, SIGNATURE, SIGNATURE, message, pygit2.Oid(hex=tree), oids))


class Loopback:
    """Serves a stand-in over real HTTP on 127.0.0.1, in a thread: ``url`` is the API base to give clients."""

    def __init__(self, fake: FakeGitHub) -> None:
        stand_in = fake

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                request = httpx.Request(
                    self.command, f"http://{self.headers['host']}{self.path}", headers=dict(self.headers), content=body
                )
                response = stand_in.handle(request)
                content = response.read()
                self.send_response(response.status_code)
                for key, value in response.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v3"

    @property
    def web_url(self) -> str:
        """github.com's own pages (the OAuth web flow), beside the API."""
        return self.url.removesuffix("/api/v3")

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
