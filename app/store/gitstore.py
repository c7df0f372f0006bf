"""The journal as commits on the branch ``interlock/state`` of a local repository.

Objects are written in-process with libgit2 (pygit2): blobs and trees built on the head that was read,
never touching the working tree, the index or the current branch. The branch then moves with
``git update-ref <new> <old>``, git's own compare-and-swap under its lock file: if another writer moved it
first the update fails and the caller re-reads. A kill -9 at any moment leaves the old head or the new
one — objects written before the ref moves are unreachable garbage, never a torn record.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pygit2

from app.engine.errors import InterlockError, RunNotFound, VersionConflict
from app.engine.record import Run
from app.store.journal import STATE_BRANCH, encode_record, record_path

ZERO = "0" * 40
STALE_LOCK_S = 10.0
IDENTITY = pygit2.Signature("Interlock", "interlock@localhost")


class StoreError(InterlockError):
    """The repository cannot hold a journal (not a git repository, unreadable record...)."""


class GitStore:
    def __init__(self, repo: Path, branch: str = STATE_BRANCH) -> None:
        try:
            self.repo = pygit2.Repository(str(repo))
        except pygit2.GitError as exc:
            raise StoreError(f"{repo} is not a git repository ({exc})") from None
        self.path = Path(self.repo.path)  # the .git folder
        self.ref = f"refs/heads/{branch}"
        self.writes = 0

    def _head(self) -> pygit2.Commit | None:
        try:
            target = self.repo.references[self.ref].target
        except KeyError:
            return None
        commit = self.repo[target]
        assert isinstance(commit, pygit2.Commit)
        return commit

    def _blob_at(self, commit: pygit2.Commit | None, path: str) -> bytes | None:
        if commit is None:
            return None
        try:
            entry = commit.tree[path]
        except KeyError:
            return None
        blob = self.repo[entry.id]
        return blob.data if isinstance(blob, pygit2.Blob) else None

    def load(self, run_id: str) -> Run:
        return self._record(self._head(), run_id)

    def _record(self, head: pygit2.Commit | None, run_id: str) -> Run:
        data = self._blob_at(head, record_path(run_id))
        if data is None:
            raise RunNotFound(run_id, f"{self.ref} of {self.path.parent}")
        try:
            return Run.model_validate_json(data)
        except ValueError as exc:
            raise StoreError(f"the record of run {run_id!r} cannot be read: {exc}") from None

    def save(self, run: Run, expected: int | None, files: dict[str, bytes] | None = None, message: str = "") -> None:
        head = self._head()
        data = self._blob_at(head, record_path(run.id))
        found = Run.model_validate_json(data).version if data is not None else None
        if found != expected:
            raise VersionConflict(run.id, expected, found)
        changes = {record_path(run.id): encode_record(run), **(files or {})}
        tree = self._tree_with(head.tree if head else None, changes)
        parents = [head.id] if head else []
        text = message or f"interlock: run {run.id} v{run.version} {run.status.value} at {run.stage}"
        commit = self.repo.create_commit(None, IDENTITY, IDENTITY, text, tree, parents)
        self._move_ref(str(commit), str(head.id) if head else ZERO, run.id, expected)
        self.writes += 1

    def _move_ref(self, new: str, old: str, run_id: str, expected: int | None) -> None:
        result = self._update_ref(new, old)
        if result.returncode != 0 and self._break_stale_lock():
            result = self._update_ref(new, old)
        if result.returncode != 0:
            head = self._head()
            latest = self._blob_at(head, record_path(run_id))
            found = Run.model_validate_json(latest).version if latest is not None else None
            if found == expected:
                raise StoreError(f"git update-ref failed: {result.stderr.strip()}")
            raise VersionConflict(run_id, expected, found)

    def _update_ref(self, new: str, old: str) -> subprocess.CompletedProcess[str]:
        command = ["git", "--git-dir", str(self.path), "update-ref", "-m", "interlock journal", self.ref, new, old]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    def _break_stale_lock(self) -> bool:
        """Remove the ref's lock file if a writer died holding it (kill -9 inside ``git update-ref``).

        A live writer holds it for a millisecond; one older than ``STALE_LOCK_S`` is a dead writer's.
        """
        lock = self.path / f"{self.ref}.lock"
        try:
            if time.time() - lock.stat().st_mtime < STALE_LOCK_S:
                return False
            lock.unlink()
            return True
        except FileNotFoundError:
            return False

    def _tree_with(self, base: pygit2.Tree | None, changes: dict[str, bytes]) -> pygit2.Oid:
        """A tree equal to ``base`` with ``changes`` written in; only the trees on changed paths are new."""
        nested: dict[str, dict[str, bytes] | bytes] = {}
        for path, content in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                sub = nested.setdefault(head, {})
                assert isinstance(sub, dict)
                sub[rest] = content
            else:
                nested[head] = content
        builder = self.repo.TreeBuilder(base) if base is not None else self.repo.TreeBuilder()
        for name, value in nested.items():
            if isinstance(value, bytes):
                builder.insert(name, self.repo.create_blob(value), pygit2.GIT_FILEMODE_BLOB)
            else:
                child = base[name] if base is not None and name in base else None
                subtree = self.repo[child.id] if child is not None else None
                tree_id = self._tree_with(subtree if isinstance(subtree, pygit2.Tree) else None, value)
                builder.insert(name, tree_id, pygit2.GIT_FILEMODE_TREE)
        return builder.write()

    def read(self, path: str) -> bytes | None:
        return self._blob_at(self._head(), path)

    def list_files(self, prefix: str) -> list[str]:
        head = self._head()
        if head is None:
            return []
        found: list[str] = []
        self._walk(head.tree, "", found)
        return sorted(path for path in found if path.startswith(prefix))

    def _walk(self, tree: pygit2.Tree, prefix: str, found: list[str]) -> None:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            obj = self.repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                self._walk(obj, path + "/", found)
            else:
                found.append(path)

    def list_runs(self) -> list[Run]:
        head = self._head()
        if head is None or "runs" not in head.tree:
            return []
        runs_tree = self.repo[head.tree["runs"].id]
        assert isinstance(runs_tree, pygit2.Tree)
        names = [entry.name[:-5] for entry in runs_tree if entry.name.endswith(".json")]
        return [self._record(head, name) for name in sorted(names)]
