"""The journal on GitHub: the same layout as on disk, on the repository's branch ``interlock/state``.

A save is one call: GraphQL's ``createCommitOnBranch`` with ``expectedHeadOid``, the head that was read
(``app/github/commits.py``), a compare-and-swap GitHub does itself. If another writer moved the branch since it
was read, GitHub refuses (``STALE_DATA``): the caller re-reads and re-applies its event (SPEC J2). Nothing is
written in place, so a failure leaves the old record. Only the branch's first commit, before the branch exists,
takes the git data API's three calls (a tree, a commit, the ref). ``write_json_cas`` writes any other JSON file
of the branch the same way (a team's queue, for one).
https://docs.github.com/en/graphql/reference/mutations#createcommitonbranch
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.engine.errors import InterlockError, RunNotFound, VersionConflict
from app.engine.record import Run
from app.github.client import GitHubError, Installation, RefConflict
from app.github.commits import CommitRefused, commit_by_git_data, commit_on_branch
from app.store.board_index import BoardIndex, board_files, read_index
from app.store.github_layout import migrating_commit
from app.store.journal import BOARD_INDEX_PATH, STATE_BRANCH, encode_record, record_path
from app.store.layout import CURRENT, V1, V2, layout_file, layout_path, placed_for, read_layout, run_of, sharded

log = logging.getLogger("interlock.github")
Model = TypeVar("Model", bound=BaseModel)
CAS_ATTEMPTS = 5  # re-reads of a file another writer changed first, before the caller is told (VersionConflict)


class StateFileUnreadable(InterlockError):
    """A file of the state branch that is not what its writer writes (edited by hand, cut short): reported, never
    overwritten, so that what it held can still be recovered from it or from the branch's history."""

    def __init__(self, path: str, reason: str, head: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.head = head  # the state commit it was read at
        super().__init__(f"{path} on the state branch cannot be read: {reason}")


class GitHubStore:
    """``board``: every save also writes the board index and ``board.md`` (``app/store/board_index.py``), from the
    index read at the head it builds on; ``board_changes`` keeps, per run, the index before its first save since
    the caller last took it and after its latest, so the board issue is edited only when what it shows changed.
    ``layout``: the journal layout new runs are written in (``app/store/layout.py``); with v2, the default, a v1
    run is moved to v2 in the commit of its next save (``app/store/github_layout.py``); v1 writes as Interlock did
    before v2 (the tests make v1 journals with it). Callers name files by their logical paths either way."""

    def __init__(
        self,
        api: Installation,
        repo: str,
        branch: str = STATE_BRANCH,
        board: bool = False,
        branch_of: Callable[[str], str] | None = None,
        layout: int = CURRENT,
        watched: tuple[str, ...] = (),
    ) -> None:
        self.api = api
        self.repo = repo
        self.branch = branch
        self.board = board
        self.boards_read: dict[str, str | None] = {}  # run id -> board.json as read with its record
        self.board_changes: dict[str, tuple[BoardIndex, BoardIndex]] = {}
        self.heads: dict[str, str] = {}  # run id -> the state head its record was read from
        self.branch_of = branch_of  # run id -> its run branch, whose head each load reads too (no call of its own)
        self.run_heads: dict[str, str | None] = {}  # run id -> its run branch's head, as last read with the record
        # other branches whose heads every load reads too (no call of its own): the default branch, which a cached
        # configuration is checked against (app/webhooks/shell.py); branch -> its head as last read
        self.watched = watched
        self.watched_heads: dict[str, str | None] = {}
        self.repository_id: str | None = None  # the repository's node id, read with every record
        self.before: dict[str, Run] = {}  # run id -> the record as last read: what a transition started from
        # run id -> the version first read, while every version read since is one this store saved (else None):
        # what another process may have shown of the run before this store (app/webhooks/checks/run.py)
        self.read_from: dict[str, int | None] = {}
        self.saved: dict[str, int] = {}  # run id -> the version this store saved last
        self.fetched: dict[str, bytes | None] = {}  # files read with the last record, at its commit, by logical path
        self.layout = layout
        self.layouts: dict[str, int] = {}  # run id -> its journal layout, read with its record or saved here

    def load(self, run_id: str, also: tuple[str, ...] = ()) -> Run:
        """The record, its layout and the files ``also`` names (logical paths, read at both the places v1 and v2
        put them) at the same commit (in ``self.fetched``, by logical path): one call."""
        placed = [where for path in also if (where := sharded(path)) is not None]
        paths = [record_path(run_id), layout_path(run_id), *also, *placed, *([BOARD_INDEX_PATH] if self.board else [])]
        branches = (self.branch_of(run_id),) if self.branch_of else ()
        snapshot = self.api.snapshot(self.repo, self.branch, paths, (*branches, *self.watched))
        record = snapshot.files.get(paths[0]) if snapshot else None
        if snapshot is not None:  # a run not found yet still tells the watched heads (a start's lookup)
            self.watched_heads.update({name: snapshot.heads.get(name) for name in self.watched})
        if snapshot is None or record is None:
            raise RunNotFound(run_id, f"{self.branch} of {self.repo}")
        self.heads[run_id] = snapshot.head
        self.repository_id = snapshot.repository_id or self.repository_id
        self.boards_read[run_id] = snapshot.files.get(BOARD_INDEX_PATH)
        for name in branches:
            self.run_heads[run_id] = snapshot.heads.get(name)
        self.fetched = {
            path: text.encode("utf-8") if text is not None else None for path, text in snapshot.files.items()
        }
        self._read_layout(run_id, also, snapshot.head)
        try:
            run = Run.from_journal(record)
        except ValidationError as exc:  # a record edited by hand or cut short: reported, never overwritten
            reason = f"not a run record ({exc.error_count()} problem(s): {first_problem(exc)})"
            raise StateFileUnreadable(paths[0], reason, snapshot.head) from None
        self.before[run_id] = run
        if run_id not in self.read_from:
            self.read_from[run_id] = run.version
        elif self.saved.get(run_id) != run.version:
            self.read_from[run_id] = None  # another writer saved since this store first read the run
        return run

    def _read_layout(self, run_id: str, also: tuple[str, ...], head: str) -> None:
        """The run's layout from its ``layout.json`` as fetched, and each file of ``also`` taken from where that
        layout puts it (a v2 run's file still at its v1 place, as a job before v2 wrote it, is found there)."""
        try:
            layout = self.layouts[run_id] = read_layout(self.fetched.get(layout_path(run_id)))
        except ValueError as exc:
            raise StateFileUnreadable(layout_path(run_id), str(exc), head) from None
        for path in also:
            where = sharded(path)
            if layout == V2 and where is not None and self.fetched.get(where) is not None:
                self.fetched[path] = self.fetched[where]

    def find(self, run_id: str) -> Run | None:
        try:
            return self.load(run_id)
        except RunNotFound:
            return None

    def save(self, run: Run, expected: int | None, files: dict[str, bytes] | None = None, message: str = "") -> None:
        head = self._head_for(run, expected)
        changes = {record_path(run.id): encode_record(run), **(files or {})}
        if self.board:  # read at ``head``, with the record: no call of its own
            before = read_index(self.boards_read.get(run.id))
            after, board = board_files(self.boards_read.get(run.id), run)
            changes.update(board)
        text = message or f"interlock: run {run.id} v{run.version} {run.status.value} at {run.stage}"
        try:
            commit, layout = self._write(run.id, head, expected, changes, text)
        except RefConflict:
            latest = self.find(run.id)
            raise VersionConflict(run.id, expected, latest.version if latest else None) from None
        self.heads[run.id] = commit
        self.saved[run.id] = run.version
        self.layouts[run.id] = layout
        if self.board:
            self.boards_read[run.id] = board[BOARD_INDEX_PATH].decode("utf-8")
            self.board_changes[run.id] = (self.board_changes.get(run.id, (before, after))[0], after)

    def write_json_cas(self, path: str, mutate: Callable[[Any], Any], message: str) -> Any:
        """``mutate`` applied to the JSON file at ``path`` (``None`` when absent) with compare-and-swap: it gets
        a copy of the value read at the branch's head and returns the value to store; on a conflict (another
        writer moved the branch) the file is re-read and ``mutate`` called again, so the last call saw what was
        stored. Returns the value as stored, or as read when ``mutate`` changed nothing (then nothing is
        written). A file that is not JSON raises ``StateFileUnreadable`` and is left as it is."""
        for _ in range(CAS_ATTEMPTS):
            head = self.api.ref(self.repo, self.branch)
            raw = self.api.file(self.repo, path, head) if head else None
            try:
                current = None if raw is None else json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise StateFileUnreadable(path, f"not JSON ({exc})", head) from None
            try:
                wanted = mutate(copy.deepcopy(current))
            except StateFileUnreadable as exc:  # JSON, but not what its writer writes: said at this head too
                raise StateFileUnreadable(exc.path, exc.reason, exc.head or head) from None
            if wanted == current:
                return current
            try:
                self._commit(head, {path: (json.dumps(wanted, indent=2, sort_keys=True) + "\n").encode()}, message)
            except RefConflict:
                continue
            return wanted
        raise VersionConflict(path, None, None)  # the caller's delivery fails; its redelivery tries again

    def change_model(
        self, path: str, kind: type[Model], edit: Callable[[Model], Model], message: str, what: str
    ) -> tuple[Model, Model]:
        """``write_json_cas`` of a file holding a ``kind`` (absent: ``kind()``, left absent while unchanged): the
        value as the winning attempt read it, and as stored. JSON that is no ``kind`` is ``StateFileUnreadable``,
        ``what`` saying what it should have been, and is left as it is."""
        seen: list[Model] = []

        def mutate(value: Any) -> Any:
            try:
                read = kind.model_validate(value) if value is not None else kind()
            except ValidationError as exc:
                reason = f"not {what} ({exc.error_count()} problem(s): {first_problem(exc)})"
                raise StateFileUnreadable(path, reason) from None
            seen[:] = [read]
            edited = edit(read.model_copy(deep=True))
            return None if value is None and edited == read else edited.model_dump(mode="json")

        saved = self.write_json_cas(path, mutate, message)
        return seen[0], kind.model_validate(saved) if saved is not None else kind()

    def _write(
        self, run_id: str, head: str | None, expected: int | None, changes: dict[str, bytes], message: str
    ) -> tuple[str, int]:
        """The save's commit and the layout it leaves the run in: a v1 run moved to v2 with it (while this store
        writes v2), a new run in this store's layout, any other in its own; files placed by that layout."""
        layout = self.layouts.get(run_id, V1) if expected is not None else self.layout
        if head is not None and expected is not None and layout == V1 and self.layout == V2:
            moved = self._migrating(head, run_id, changes, message)
            if moved is not None:
                return moved, V2
        if expected is None and layout == V2:
            changes = {**changes, layout_path(run_id): layout_file(V2)}
        return self._commit(head, {placed_for(run_id, p, layout): d for p, d in changes.items()}, message), layout

    def _migrating(self, head: str, run_id: str, changes: dict[str, bytes], message: str) -> str | None:
        """The save of a v1 run that also moves it to v2, in one commit (``app/store/github_layout.py``)."""
        commit = migrating_commit(self.api, self.repo, self.branch, head, run_id, changes, message)
        if commit is not None:
            log.info("run %s of %s moved to journal layout v2 with its save", run_id, self.repo)
        return commit

    def _commit(self, head: str | None, changes: dict[str, bytes], message: str) -> str:
        """The files committed on ``head``, the branch moved to the commit only if it is still at ``head``
        (``RefConflict`` otherwise); a branch that does not exist yet is made."""
        if head is not None:
            try:
                commit = commit_on_branch(self.api, self.repo, self.branch, head, message, changes)
            except CommitRefused as exc:  # not a moved branch: a redelivery would be refused the same way
                log.warning("a save to %s went by the git data API: %s", self.branch, exc)
                commit = commit_by_git_data(self.api, self.repo, self.branch, head, message, changes)
        else:
            entries = [
                {"path": path, "mode": "100644", "type": "blob", "content": data.decode("utf-8")}
                for path, data in changes.items()
            ]
            tree = self.api.tree(self.repo, entries, None)
            commit = self.api.commit(self.repo, message, tree, [])
            try:
                self.api.create_ref(self.repo, self.branch, commit)
            except GitHubError as exc:  # another writer made the branch first (422): a conflict, re-read
                raise RefConflict("POST", "/git/refs", exc.status, str(exc)) if exc.status == 422 else exc from None
        return commit

    def _head_for(self, run: Run, expected: int | None) -> str | None:
        """The head to build on: the one the record was read from, or for a new run the branch's current head
        (refusing a run id that is already taken)."""
        if expected is not None:
            if run.id not in self.heads:
                self.load(run.id)
            return self.heads[run.id]
        if self.board:  # the head, the record if taken and the board index at that head, in one call
            snapshot = self.api.snapshot(self.repo, self.branch, [record_path(run.id), BOARD_INDEX_PATH])
            head, taken = (snapshot.head, snapshot.files[record_path(run.id)]) if snapshot else (None, None)
            self.boards_read[run.id] = snapshot.files[BOARD_INDEX_PATH] if snapshot else None
            existing = taken.encode("utf-8") if taken is not None else None
        else:
            head = self.api.ref(self.repo, self.branch)
            existing = self.api.file(self.repo, record_path(run.id), head) if head else None
        if existing is not None:
            raise VersionConflict(run.id, None, Run.from_journal(existing).version)
        return head

    def read(self, path: str) -> bytes | None:
        """The file of logical ``path``: from the last snapshot when it was read with the record, else at the
        head, where its run's layout puts it (a run whose layout is not known yet: its v2 place, then its v1)."""
        if path in self.fetched:
            return self.fetched[path]
        head = self.api.ref(self.repo, self.branch)
        if head is None:
            return None
        run = run_of(path)
        where = sharded(path) if self.layouts.get(run or "") != V1 else None
        found = self.api.file(self.repo, where, head) if where is not None else None
        return found if found is not None else self.api.file(self.repo, path, head)


def first_problem(exc: ValidationError) -> str:
    """The first problem of a refused value, where it is and what is wrong: enough for a person to find it."""
    error = exc.errors()[0]
    return f"{'.'.join(str(part) for part in error['loc']) or 'the whole file'}: {error['msg']}"
