"""The job's git: fetch, read and push through the repository's remote with the write token.

The token reaches git through ``GIT_CONFIG_*`` variables of each git process, as an HTTP extra header
(the way ``actions/checkout`` authenticates), so it is neither stored in ``.git/config`` — where the agent,
running in the same checkout, could read it — nor visible in a process listing. Every commit names its own
author and committer: a fresh runner has no git identity.
https://docs.github.com/en/actions/security-for-github-actions/security-guides/automatic-token-authentication
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from pathlib import Path

from app.engine.errors import InterlockError

IDENTITY = {
    "GIT_AUTHOR_NAME": "Interlock",
    "GIT_AUTHOR_EMAIL": "interlock@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "Interlock",
    "GIT_COMMITTER_EMAIL": "interlock@users.noreply.github.com",
}
PUSH_ATTEMPTS = 8


class RemoteError(InterlockError):
    pass


class Remote:
    def __init__(self, workdir: Path, token: str | None = None, name: str = "origin") -> None:
        self.workdir = workdir
        self.name = name
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG_")}
        self.env |= {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **IDENTITY}  # messages parsed below are English
        if token:
            header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            self.env |= {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraheader",
                "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {header}",
            }

    def git(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
        result = subprocess.run(
            ["git", *args], cwd=self.workdir, input=stdin, capture_output=True, env={**self.env, **(env or {})}
        )
        if result.returncode != 0:
            raise RemoteError(f"git {args[0]} failed: {result.stderr.decode(errors='replace').strip()[:500]}")
        return result.stdout

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").decode().strip()

    def is_ancestor(self, old: str, new: str) -> bool:
        result = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=self.workdir, env=self.env)
        return result.returncode == 0

    def fetch(self, branch: str) -> str | None:
        """The remote head of ``branch``, fetched as ``refs/interlock/<branch>``; ``None`` when there is no such
        branch. One round trip: the head returned is the very commit fetched."""
        try:
            self.git("fetch", "--quiet", "--no-tags", self.name, f"+refs/heads/{branch}:refs/interlock/{branch}")
        except RemoteError as exc:
            if "couldn't find remote ref" in str(exc):
                return None
            raise
        return self.git("rev-parse", f"refs/interlock/{branch}").decode().strip()

    def show(self, commit: str, path: str) -> bytes | None:
        try:
            return self.git("cat-file", "blob", f"{commit}:{path}")
        except RemoteError:
            return None

    def names(self, commit: str, folder: str) -> list[str]:
        try:
            listing = self.git("ls-tree", "--name-only", f"{commit}:{folder}")
        except RemoteError:
            return []
        return listing.decode().splitlines()

    def push(self, commit: str, branch: str) -> bool:
        """A fast-forward push of ``commit`` to ``branch``; ``False`` when the branch moved meanwhile."""
        try:
            self.git("push", "--quiet", self.name, f"{commit}:refs/heads/{branch}")
        except RemoteError as exc:
            if "rejected" in str(exc) or "fetch first" in str(exc) or "non-fast-forward" in str(exc):
                return False
            raise
        return True

    def add_files(self, branch: str, files: dict[str, bytes], message: str) -> str:
        """Commit ``files`` on top of the remote ``branch`` and push; a concurrent writer makes the push fail,
        and the commit is rebuilt on the new head (compare-and-swap, like the service's saves)."""
        for _ in range(PUSH_ATTEMPTS):
            head = self.fetch(branch)
            commit = self._commit_on(head, files, message)
            if self.push(commit, branch):
                return commit
        raise RemoteError(f"could not push to {branch}: it kept moving ({PUSH_ATTEMPTS} attempts)")

    def _commit_on(self, head: str | None, files: dict[str, bytes], message: str) -> str:
        with tempfile.TemporaryDirectory() as scratch:
            index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            if head:
                self.git("read-tree", head, env=index)
            for path, data in files.items():
                blob = self.git("hash-object", "-w", "--stdin", stdin=data).decode().strip()
                self.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=index)
            tree = self.git("write-tree", env=index).decode().strip()
        parents = ["-p", head] if head else []
        return self.git("commit-tree", tree, *parents, "-m", message).decode().strip()
