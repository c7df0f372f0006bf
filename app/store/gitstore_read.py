"""The reading half of the local journal store (``app/store/gitstore.py``): the branch ``interlock/state`` of a
local repository read through libgit2, at its head, without a working tree, an index or a ``git`` process.

Why apart: reports, boards and ``verify`` only read, and the writer's compare-and-swap, packs and maintenance
(``GitStore``) need none of this module's callers to know them. Files are named by their logical paths
(``app/store/layout.py``) and found where the run's layout puts them, so a reader reads layouts v1 and v2 alike.
Why a library here and the ``git`` program elsewhere: ``app/gitaccess.py``.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from app.engine.errors import InterlockError, RunNotFound
from app.engine.record import Run
from app.store.journal import RECORD_SUFFIX, RUNS_FOLDER, STATE_BRANCH, record_path
from app.store.layout import layout_path, logical, read_layout, sharded


class StoreError(InterlockError):
    """The repository cannot hold a journal (not a git repository, unreadable record...)."""


def common_dir(git_dir: Path) -> Path:
    """Where objects and branches live: a linked worktree's own git folder names it in ``commondir``."""
    pointer = git_dir / "commondir"
    if pointer.is_file():
        return (git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


class GitReader:
    """The state branch ``branch`` of the repository at ``repo`` (a linked worktree's or a bare one), read."""

    def __init__(self, repo: Path, branch: str = STATE_BRANCH) -> None:
        try:
            self.repo = pygit2.Repository(str(repo))
        except pygit2.GitError as exc:
            raise StoreError(f"{repo} is not a git repository ({exc})") from None
        self.path = common_dir(Path(self.repo.path))  # the .git folder (the main one, from a linked worktree)
        self.ref = f"refs/heads/{branch}"

    def _head_id(self) -> pygit2.Oid | None:
        try:
            target = self.repo.references[self.ref].target
        except KeyError:
            return None
        return target if isinstance(target, pygit2.Oid) else None  # a symbolic ref names no commit

    def _head(self) -> pygit2.Commit | None:
        return self._commit(self._head_id())

    def _commit(self, target: pygit2.Oid | None) -> pygit2.Commit | None:
        if target is None:
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

    def _record(self, head: pygit2.Commit | None, run_id: str) -> Run:
        data = self._blob_at(head, record_path(run_id))
        if data is None:
            raise RunNotFound(run_id, f"{self.ref} of {self.path.parent}")
        try:
            return Run.from_journal(data)
        except ValueError as exc:
            raise StoreError(f"the record of run {run_id!r} cannot be read: {exc}") from None

    def _layout_at(self, commit: pygit2.Commit | None, run_id: str) -> int:
        try:
            return read_layout(self._blob_at(commit, layout_path(run_id)))
        except ValueError as exc:
            raise StoreError(f"run {run_id!r} cannot be written: {exc}") from None

    def read(self, path: str) -> bytes | None:
        """The file of logical ``path`` (``app/store/layout.py``), wherever the run's layout puts it."""
        head = self._head()
        v2 = sharded(path)
        found = self._blob_at(head, v2) if v2 is not None else None
        return found if found is not None else self._blob_at(head, path)

    def located(self, path: str) -> str:
        """Where the file of logical ``path`` lies on the branch now: what ``git show`` needs."""
        v2 = sharded(path)
        return v2 if v2 is not None and self._blob_at(self._head(), v2) is not None else path

    def list_files(self, prefix: str) -> list[str]:
        """The logical paths of the files under ``prefix``, in either layout; only the folder ``prefix`` names
        is walked, not the whole branch."""
        head = self._head()
        if head is None:
            return []
        folder = prefix.rpartition("/")[0]
        try:
            tree = self.repo[head.tree[folder].id] if folder else head.tree
        except KeyError:
            return []
        if not isinstance(tree, pygit2.Tree):
            return []
        found: list[str] = []
        self._walk(tree, f"{folder}/" if folder else "", found)
        return sorted(name for name in map(logical, found) if name.startswith(prefix))

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
        if head is None or RUNS_FOLDER not in head.tree:
            return []
        runs_tree = self.repo[head.tree[RUNS_FOLDER].id]
        assert isinstance(runs_tree, pygit2.Tree)
        listed = (entry.name or "" for entry in runs_tree)  # a tree entry always has a name (typed optional)
        names = [name.removesuffix(RECORD_SUFFIX) for name in listed if name.endswith(RECORD_SUFFIX)]
        return [self._record(head, name) for name in sorted(names)]
