"""The journal on GitHub: the same layout as on disk, on the repository's branch ``interlock/state``.

A save is three calls: a tree built on the head that was read (file contents inline), a commit whose
parent is that head, and a fast-forward-only update of the branch. If another writer moved the branch
since it was read, the update is not a fast-forward and fails with 422: the caller re-reads and re-applies
its event (SPEC J2). Nothing is written in place, so a failure at any step leaves the old record.
https://docs.github.com/en/rest/git/refs#update-a-reference
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from app.engine.errors import RunNotFound, VersionConflict
from app.engine.record import Run
from app.github.client import Installation, RefConflict
from app.store.journal import STATE_BRANCH, encode_record, record_path

TREE_CACHE = 32


class GitHubStore:
    def __init__(self, api: Installation, repo: str, branch: str = STATE_BRANCH) -> None:
        self.api = api
        self.repo = repo
        self.branch = branch
        self.heads: dict[str, str] = {}  # run id -> the state head its record was read from
        self.tree_cache: dict[str, str] = {}  # commit -> its tree, for the commits this store made or read
        self.fetched: dict[str, bytes | None] = {}  # files read with the last record, at its commit

    def load(self, run_id: str, also: tuple[str, ...] = ()) -> Run:
        """The record, and the files ``also`` names at the same commit (in ``self.fetched``): one call."""
        paths = [record_path(run_id), *also]
        snapshot = self.api.snapshot(self.repo, self.branch, paths)
        record = snapshot.files.get(paths[0]) if snapshot else None
        if snapshot is None or record is None:
            raise RunNotFound(run_id, f"{self.branch} of {self.repo}")
        self.heads[run_id] = snapshot.head
        self._remember_tree(snapshot.head, snapshot.tree)
        self.fetched = {
            path: text.encode("utf-8") if text is not None else None for path, text in snapshot.files.items()
        }
        return Run.from_journal(record)

    def find(self, run_id: str) -> Run | None:
        try:
            return self.load(run_id)
        except RunNotFound:
            return None

    def save(self, run: Run, expected: int | None, files: dict[str, bytes] | None = None, message: str = "") -> None:
        head = self._head_for(run, expected)
        changes = {record_path(run.id): encode_record(run), **(files or {})}
        entries = [
            {"path": path, "mode": "100644", "type": "blob", "content": data.decode("utf-8")}
            for path, data in changes.items()
        ]
        tree = self.api.tree(self.repo, entries, self._tree_of(head) if head else None)
        text = message or f"interlock: run {run.id} v{run.version} {run.status.value} at {run.stage}"
        commit = self.api.commit(self.repo, text, tree, [head] if head else [])
        try:
            if head is None:
                self.api.create_ref(self.repo, self.branch, commit)
            else:
                self.api.update_ref(self.repo, self.branch, commit)
        except RefConflict:
            latest = self.find(run.id)
            raise VersionConflict(run.id, expected, latest.version if latest else None) from None
        self.heads[run.id] = commit
        self._remember_tree(commit, tree)

    def _head_for(self, run: Run, expected: int | None) -> str | None:
        """The head to build on: the one the record was read from, or for a new run the branch's current head
        (refusing a run id that is already taken)."""
        if expected is not None:
            if run.id not in self.heads:
                self.load(run.id)
            return self.heads[run.id]
        head = self.api.ref(self.repo, self.branch)
        existing = self.api.file(self.repo, record_path(run.id), head) if head else None
        if existing is not None:
            raise VersionConflict(run.id, None, Run.from_journal(existing).version)
        return head

    def _tree_of(self, head: str) -> str:
        if head not in self.tree_cache:
            self._remember_tree(head, self.api.commit_tree(self.repo, head))
        return self.tree_cache[head]

    def _remember_tree(self, commit: str, tree: str) -> None:
        self.tree_cache[commit] = tree
        while len(self.tree_cache) > TREE_CACHE:
            self.tree_cache.pop(next(iter(self.tree_cache)))

    def read(self, path: str) -> bytes | None:
        """A file of the state branch: from the last snapshot when it was read with the record."""
        if path in self.fetched:
            return self.fetched[path]
        head = self.api.ref(self.repo, self.branch)
        return self.api.file(self.repo, path, head) if head else None


Model = TypeVar("Model", bound=BaseModel)
ATTEMPTS = 5


def change_json(
    api: Installation, repo: str, path: str, kind: type[Model], edit: Callable[[Model], Model], message: str
) -> Model:
    """``edit`` applied to the JSON file ``path`` of the state branch with compare-and-swap, the one writer of the
    service's small shared files (a team's queue, a team's hold): a commit on the head that was read and a
    fast-forward-only update of the branch, re-read and re-applied when another writer (another delivery,
    another service replica) moved it first. The file as saved, or as read when ``edit`` changed nothing."""
    for _ in range(ATTEMPTS):
        head = api.ref(repo, STATE_BRANCH)
        data = api.file(repo, path, head) if head else None
        read = kind.model_validate_json(data) if data else kind()
        edited = edit(read.model_copy(deep=True))
        if edited == read:
            return read
        text = json.dumps(edited.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        entry = {"path": path, "mode": "100644", "type": "blob", "content": text}
        tree = api.tree(repo, [entry], api.commit_tree(repo, head) if head else None)
        commit = api.commit(repo, message, tree, [head] if head else [])
        try:
            if head is None:
                api.create_ref(repo, STATE_BRANCH, commit)
            else:
                api.update_ref(repo, STATE_BRANCH, commit)
        except RefConflict:
            continue
        return edited
    raise VersionConflict(path, None, None)  # the delivery fails; its redelivery tries again
