"""The job's git: fetch, read, commit and push through the repository's remote.

Every git process runs in ``app.gitaccess.isolated_env``: hooks and filesystem monitors off, without the
global or system configuration, so nothing an agent left in the checkout (a hook, a config line) runs with
Interlock's token. The token reaches git through ``GIT_CONFIG_*`` variables of each git process, as an HTTP
extra header scoped to the remote's host (the way ``actions/checkout`` authenticates): it is neither stored
in ``.git/config`` nor visible in a process listing. Every commit names Interlock (``app.gitaccess.ON_GITHUB``)
as its author and committer: a fresh runner has no git identity.
https://docs.github.com/en/actions/security-for-github-actions/security-guides/automatic-token-authentication
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from app.engine.errors import InterlockError
from app.gitaccess import ON_GITHUB, isolated_env, run_git
from app.runner.ignore import excludes_file
from app.store.journal import events_folder, missions_folder, orders_folder
from app.store.layout import V1, V2, layout_file, layout_path, placed_for, read_layout, sharded

PUSH_ATTEMPTS = 8


class RemoteError(InterlockError):
    pass


class PushRefused(RemoteError):
    """The remote refused the push for another reason than a concurrent writer (a protected branch, a rule)."""


def push_token(env: Mapping[str, str]) -> str | None:
    """The token a pushing job writes with: ``INTERLOCK_PUSH_TOKEN`` (the action's ``token`` input), else the
    job's own ``GITHUB_TOKEN``."""
    return env.get("INTERLOCK_PUSH_TOKEN") or env.get("GITHUB_TOKEN")


# What git reports when the branch moved under a push: behind it (``non-fast-forward``, ``fetch first``), or
# moved by another writer between the remote's check and its ref update ("cannot lock ref …: is at X but
# expected Y", which GitHub answers too when an API write races the push).
MOVED = ("(non-fast-forward)", "(fetch first)", "but expected")


class Remote:
    def __init__(self, workdir: Path, token: str | None = None, remote: str = "origin", partial: str = "") -> None:
        """``partial``, a filter such as ``blob:none``, makes every fetch partial: for a scratch repository that
        checks nothing out and holds the token throughout, so a blob something reads later comes from the remote
        then (``app/runner/partial.py``)."""
        self.workdir = workdir
        self.remote = remote
        self.partial = partial
        self.env: dict[str, str] = isolated_env(ON_GITHUB)  # without the token, to find the remote's URL
        self.env = isolated_env(ON_GITHUB, self._auth(token))

    def _auth(self, token: str | None) -> list[tuple[str, str]]:
        """The token as an extra header for the remote's host only; none for a remote that is not HTTP."""
        if not token:
            return []
        url = self.remote if "://" in self.remote else self._url_of(self.remote)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return []
        header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        return [(f"http.{parts.scheme}://{parts.netloc}/.extraheader", f"AUTHORIZATION: basic {header}")]

    def _url_of(self, name: str) -> str:
        found = run_git(["remote", "get-url", name], self.workdir, self.env)
        return found.stdout.decode(errors="replace").strip()

    def git(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
        result = run_git(args, self.workdir, {**self.env, **(env or {})}, stdin)
        if result.returncode != 0:
            raise RemoteError(f"git {args[0]} failed: {result.stderr.decode(errors='replace').strip()[:500]}")
        return result.stdout

    def head(self, ref: str = "HEAD") -> str:
        return self.git("rev-parse", ref).decode().strip()

    def is_ancestor(self, old: str, new: str) -> bool:
        result = run_git(["merge-base", "--is-ancestor", old, new], self.workdir, self.env)
        return result.returncode == 0

    def fetch(self, branch: str) -> str | None:
        """The remote head of ``branch``, fetched as ``refs/interlock/<branch>``; ``None`` when there is no such
        branch. One round trip: the head returned is the very commit fetched."""
        refspec = f"+refs/heads/{branch}:refs/interlock/{branch}"
        partial = (f"--filter={self.partial}",) if self.partial else ()
        try:
            self.git("fetch", "--quiet", "--no-tags", *partial, self.remote, refspec)
        except RemoteError as exc:
            if "couldn't find remote ref" in str(exc):
                return None
            raise
        return self.head(f"refs/interlock/{branch}")

    def read_bundle(self, bundle: Path, ref: str) -> str:
        """The head of ``ref`` in ``bundle``, its objects added to this repository and ``ref`` pointing at it.

        Not ``git fetch <bundle>``: in a partial repository fetch's connectivity check walks every promisor
        object (seconds on a large history, for a pack of a few objects). ``bundle unbundle`` indexes the pack;
        the check here walks only what the bundle adds, and a missing object that no promisor pack announced is
        an error before the ref exists. https://git-scm.com/docs/git-bundle"""
        self.git("bundle", "verify", "--quiet", str(bundle))
        listing = self.git("bundle", "unbundle", str(bundle)).decode()
        heads = {name: oid for oid, _, name in (line.partition(" ") for line in listing.splitlines())}
        head = heads.get(ref)
        if head is None:
            raise RemoteError(f"the bundle has no {ref}")
        self.git("rev-list", "--objects", "--missing=allow-promisor", "--quiet", head, "--not", "--all")
        self.git("update-ref", ref, head)
        return head

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

    def commit_all(self, message: str) -> None:
        """Commit every change in the working tree, if there is any (hooks never run: see the module), except
        caches and environments git does not track yet (``app/runner/ignore.py``)."""
        git_dir = Path(self.git("rev-parse", "--absolute-git-dir").decode().strip())
        self.git("-c", f"core.excludesFile={excludes_file(git_dir, self.env)}", "add", "--all")
        if self.git("status", "--porcelain").strip():
            self.git("commit", "--quiet", "--no-verify", "-m", message)

    def push(self, commit: str, branch: str) -> bool:
        """A fast-forward push of ``commit`` to ``branch``: ``False`` when the branch moved meanwhile,
        ``PushRefused`` when the remote refuses it for another reason."""
        refspec = f"{commit}:refs/heads/{branch}"
        result = run_git(["push", "--porcelain", self.remote, refspec], self.workdir, self.env)
        if result.returncode == 0:
            return True
        report = (result.stdout + result.stderr).decode(errors="replace")
        if any(moved in report for moved in MOVED):
            return False
        raise PushRefused(f"the push to {branch} was refused: {report.strip()[-500:]}")

    def add_files(self, branch: str, files: dict[str, bytes], message: str, run_id: str | None = None) -> str:
        """Commit ``files`` on top of the remote ``branch`` and push; a concurrent writer makes the push fail,
        and the commit is rebuilt on the new head (compare-and-swap, like the service's saves). With ``run_id``,
        ``files`` are logical paths (``app/store/layout.py``) placed by the run's layout at each head tried, and
        a v1 run is moved to v2 in that same commit (``_resharded``)."""
        for _ in range(PUSH_ATTEMPTS):
            head = self.fetch(branch)
            commit = self._commit_on(head, files, message, run_id)
            if self.push(commit, branch):
                return commit
        raise RemoteError(f"could not push to {branch}: it kept moving ({PUSH_ATTEMPTS} attempts)")

    def layout_at(self, commit: str, run_id: str) -> int:
        """The journal layout of run ``run_id`` at ``commit``, as its ``layout.json`` says (none: v1)."""
        try:
            return read_layout(self.show(commit, layout_path(run_id)))
        except ValueError as exc:
            raise RemoteError(f"run {run_id!r} cannot be written: {exc}") from None

    def _resharded(self, head: str, run_id: str, index: dict[str, str]) -> None:
        """Move a v1 run's numbered files into v2 buckets in ``index``: each entry renamed with its blob id, so
        no file's bytes change and every hash the chain recorded (SPEC J6) stays true."""
        folders = [path.rstrip("/") for path in (missions_folder(run_id), orders_folder(run_id), events_folder(run_id))]
        listing = self.git("ls-tree", "-r", "--full-tree", head, "--", *folders).decode()
        moves: list[str] = []
        for line in listing.splitlines():
            meta, _, path = line.partition("\t")
            mode, _, blob = meta.split(" ")
            target = sharded(path)
            if target is not None:
                moves += [f"0 {'0' * 40}\t{path}", f"{mode} {blob}\t{target}"]
        if moves:
            self.git("update-index", "--index-info", stdin=("\n".join(moves) + "\n").encode(), env=index)

    def _commit_on(self, head: str | None, files: dict[str, bytes], message: str, run_id: str | None = None) -> str:
        with tempfile.TemporaryDirectory() as scratch:
            index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            if head:
                self.git("read-tree", head, env=index)
            if run_id is not None:
                files = {placed_for(run_id, path, V2): data for path, data in files.items()}
                if head and self.layout_at(head, run_id) == V1:  # lazy migration, in this one commit
                    self._resharded(head, run_id, index)
                    files[layout_path(run_id)] = layout_file(V2)
            for path, data in files.items():
                blob = self.git("hash-object", "-w", "--stdin", stdin=data).decode().strip()
                self.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=index)
            tree = self.git("write-tree", env=index).decode().strip()
        parents = ["-p", head] if head else []
        return self.git("commit-tree", tree, *parents, "-m", message).decode().strip()
