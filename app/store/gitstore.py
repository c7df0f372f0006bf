"""The journal as commits on the branch ``interlock/state`` of a local repository.

Objects are built in-process on the head that was read and written as one pack per save
(``app/store/packwriter.py``), never touching the working tree, the index or the current branch. The
branch then moves with ``git update-ref <new> <old>``, git's own compare-and-swap under its lock file: if
another writer moved it first the update fails and the caller re-reads. A kill -9 at any moment leaves the
old head or the new one — objects written before the ref moves are unreachable garbage, never a torn record.
This is the writing half; what reads the branch (reports, boards, ``verify``) is ``app/store/gitstore_read.py``.
Why a library here and the ``git`` program elsewhere: ``app/gitaccess.py``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

import pygit2

from app.engine.anchor import Anchor
from app.engine.errors import RunNotFound, VersionConflict
from app.engine.record import Run
from app.gitaccess import ON_MACHINE, on_machine_env, run_git
from app.store.anchor_file import write_anchor
from app.store.gitstore_read import GitReader, StoreError, common_dir
from app.store.journal import STATE_BRANCH, encode_record, record_path
from app.store.layout import CURRENT, V1, V2, layout_file, layout_path, placed_for
from app.store.packwriter import PackWriter
from app.store.reshard import resharded
from app.store.treecache import TreeCache

__all__ = ["GitStore", "StoreError", "common_dir"]  # the reading half's names, imported from here as before

ZERO = "0" * 40
STALE_LOCK_S = 10.0
LOCK_WAIT_S = 1.0
GC_EVERY = 40  # saves between pack merges: under git's gc.autoPackLimit (50), so git never repacks for us


def _uses_reftable(repo: pygit2.Repository) -> bool:
    try:
        return str(repo.config["extensions.refstorage"]).lower() == "reftable"
    except KeyError:
        return False


MOVED = "moved by another writer"
MOVED_TRIES = 20  # each try is a commit of a few files: another writer can win only so many times in a row


class _HeadMoved(Exception):
    """The branch moved between the read of its head and the swap, this run's record unchanged: save again."""


class _Saved(NamedTuple):
    """This store's last save: while the branch still names ``commit``, its record and tree need no reading."""

    commit: pygit2.Oid
    tree: pygit2.Oid
    run: Run
    layout: int


class GitStore(GitReader):
    """``layout``: the journal layout new runs are written in (``app/store/layout.py``); with v2, the default, a
    v1 run is moved to v2 in the commit of its next save. v1 writes as Interlock did before v2 (the tests and the
    benchmark make v1 journals with it); a run already v2 is written v2 either way."""

    def __init__(self, repo: Path, branch: str = STATE_BRANCH, layout: int = CURRENT) -> None:
        super().__init__(repo, branch)
        self.reftable = _uses_reftable(self.repo)
        self.writes = 0
        self.layout = layout
        self._maintaining: subprocess.Popen[bytes] | None = None
        self._written: dict[str, tuple[pygit2.Oid, Run]] = {}  # run id -> (record blob id, record) last saved here
        self._trees = TreeCache(self.repo)  # the trees of the last saves, to splice the next save's changes into
        self._last: _Saved | None = None

    def _version_at(self, commit: pygit2.Commit | None, run_id: str) -> int | None:
        """The version of the record at ``commit``. A record this store wrote itself is known by its blob id,
        so the common save (nobody else wrote in between) does not parse the whole record to check it."""
        if commit is None:
            return None
        try:
            entry = commit.tree[record_path(run_id)]
        except KeyError:
            return None
        known = self._written.get(run_id)
        if known is not None and known[0] == entry.id:
            return known[1].version
        data = self._blob_at(commit, record_path(run_id))
        return Run.from_journal(data).version if data is not None else None

    def load(self, run_id: str) -> Run:
        """The record at the head: the one this store saved last, if nobody wrote it since (records are never
        changed once built, as ``MemoryStore`` keeps them), else read and validated."""
        head_id = self._head_id()
        if self._last is not None and self._last.commit == head_id and self._last.run.id == run_id:
            return self._last.run  # the head is this store's last save: nothing to read
        head = self._commit(head_id)
        known = self._written.get(run_id)
        if known is not None and head is not None:
            try:
                if head.tree[record_path(run_id)].id == known[0]:
                    return known[1]
            except KeyError:
                pass
        return self._record(head, run_id)

    def save(self, run: Run, expected: int | None, files: dict[str, bytes] | None = None, message: str = "") -> None:
        """Save on the head as read; when another run's save moved the branch meanwhile (this run's record
        unchanged), again on the new head: two runs of one repository save at once (a team's queue)."""
        for _ in range(MOVED_TRIES - 1):
            try:
                return self._save_once(run, expected, files, message)
            except _HeadMoved:
                continue
        try:
            return self._save_once(run, expected, files, message)
        except _HeadMoved as exc:
            raise StoreError(f"cannot move {self.ref}: {exc}") from None

    def _save_once(self, run: Run, expected: int | None, files: dict[str, bytes] | None, message: str) -> None:
        head_id = self._head_id()
        last = self._last
        found: int | None
        base: pygit2.Oid | None
        if last is not None and last.commit == head_id and last.run.id == run.id:
            found, base, layout = last.run.version, last.tree, last.layout  # this store's last save: nothing to read
        else:
            head = self._commit(head_id)
            found, base = self._version_at(head, run.id), head.tree_id if head else None
            layout = self._layout_at(head, run.id) if found is not None else self.layout
        if found != expected:
            raise VersionConflict(run.id, expected, found)
        record = encode_record(run)
        changes = {record_path(run.id): record}
        objects = PackWriter(self.path / "objects")
        self._trees.pending.clear()
        try:
            if found is not None and layout == V1 and self.layout == V2:  # lazy migration, in this one commit
                base, layout = resharded(self._trees, objects, base, run.id), V2
            elif found is None and layout == V2:
                changes[layout_path(run.id)] = layout_file(V2)
            changes.update({placed_for(run.id, path, layout): data for path, data in (files or {}).items()})
            tree = self._tree_with(objects, base, changes)
            parents = [head_id] if head_id else []
            text = message or f"interlock: run {run.id} v{run.version} {run.status.value} at {run.stage}"
            commit = objects.commit(tree, parents, text, ON_MACHINE.name, ON_MACHINE.email)
            objects.write()  # one pack before the branch moves: a crash leaves garbage or the new head
        except ValueError as exc:
            raise StoreError(f"run {run.id} cannot be saved: {exc}") from None
        finally:
            self._trees.pending.clear()
        self._move_ref(str(commit), str(head_id) if head_id else ZERO, run.id, expected)
        # SPEC J6: the chain's head outside the journal, once the branch names it (app/store/anchor_file.py)
        write_anchor(self.path, Anchor(run.id, run.version, hashlib.sha256(record).hexdigest(), str(commit)))
        self._written[run.id] = (pygit2.hash(record), run)
        self._last = _Saved(commit, tree, run, layout)
        self.writes += 1
        if self.writes % GC_EVERY == 0:
            self._maintain()

    def _move_ref(self, new: str, old: str, run_id: str, expected: int | None) -> None:
        moved, problem = self._swap_ref(new, old)
        deadline = time.monotonic() + LOCK_WAIT_S
        while not moved and problem.startswith("locked") and time.monotonic() < deadline:
            time.sleep(0.002)  # another writer holds the lock for about a millisecond, as with git's own wait
            moved, problem = self._swap_ref(new, old)
        if not moved and problem.startswith("locked") and self._break_stale_lock():
            moved, problem = self._swap_ref(new, old)
        if not moved:
            latest = self._blob_at(self._head(), record_path(run_id))
            found = Run.from_journal(latest).version if latest is not None else None
            if found == expected and problem == MOVED:
                raise _HeadMoved(problem)
            if found == expected:
                raise StoreError(f"cannot move {self.ref}: {problem}")
            raise VersionConflict(run_id, expected, found)

    def _swap_ref(self, new: str, old: str) -> tuple[bool, str]:
        """Compare-and-swap of the branch with git's own lock-file protocol, in process.

        Like ``git update-ref NEW OLD``: create ``<ref>.lock`` exclusively, check the ref still names ``old``,
        write ``new`` into the lock and rename it over the ref. Git and other writers honour the same lock.
        """
        if self.reftable:
            result = run_git(["--git-dir", str(self.path), "update-ref", self.ref, new, old], None, on_machine_env())
            return result.returncode == 0, result.stderr.decode(errors="replace").strip()
        loose = self.path / self.ref
        lock = loose.with_name(loose.name + ".lock")
        loose.parent.mkdir(parents=True, exist_ok=True)
        try:
            handle = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False, f"locked by another writer ({lock})"
        renamed = False
        try:
            if self._current(loose) != old:
                return False, MOVED
            os.write(handle, f"{new}\n".encode())
            os.close(handle)
            handle = -1
            os.replace(lock, loose)
            renamed = True
            return True, ""
        finally:
            if handle >= 0:
                os.close(handle)
            if not renamed:
                lock.unlink(missing_ok=True)

    def _current(self, loose: Path) -> str:
        try:
            return loose.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            packed = self.repo.references.get(self.ref)
            return str(packed.target) if packed is not None else ZERO

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

    def _tree_with(self, objects: PackWriter, base: pygit2.Oid | None, changes: dict[str, bytes]) -> pygit2.Oid:
        """A tree equal to ``base`` with ``changes`` written in; only the trees on changed paths are new, each
        spliced from its previous version (``app/store/treecache.py``). Names stay bytes, as git stores them: a
        name that is not UTF-8 already on the branch is kept."""
        nested: dict[bytes, dict[str, bytes] | bytes] = {}
        for path, content in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                sub = nested.setdefault(head.encode(), {})
                assert isinstance(sub, dict)
                sub[rest] = content
            else:
                nested[head.encode()] = content
        entries = self._trees.entries(base)
        for name, value in nested.items():
            if isinstance(value, bytes):
                entries.put(name, objects.blob(value), folder=False)
            else:
                entries.put(name, self._tree_with(objects, entries.subtree(name), value), folder=True)
        tree = objects.add("tree", entries.data())
        self._trees.remember(tree, entries)
        return tree

    def _maintain(self) -> None:
        """Merge the small packs saves leave, geometrically (each merge at least doubles a pack, so a long
        journal keeps a few packs and each object is rewritten a logarithmic number of times); successive
        versions of a record then cost their delta, which keeps the journal's size linear in the run's
        length. Now and then ``git gc --auto`` prunes garbage (and stands in for a git older than 2.32, which
        has no geometric repack). It runs beside the saves, one at a time: git's repack is safe with
        concurrent writers, removing only the packs it merged."""
        if self._maintaining is not None and self._maintaining.poll() is None:
            return
        self.repo = pygit2.Repository(str(self.path))  # libgit2 keeps every pack it has seen, merged away or not:
        self._trees.repo = self.repo  # a fresh handle knows only today's, or lookups would slow with the journal
        merge = 'git --git-dir "$1" repack -d -q --geometric=2 && [ "$2" != prune ]'
        gc = 'git --git-dir "$1" -c gc.autoDetach=false gc --auto --quiet'
        prune = "prune" if self.writes % (GC_EVERY * 10) == 0 else "keep"
        self._maintaining = subprocess.Popen(
            ["sh", "-c", f"{merge} || {gc}", "sh", str(self.path), prune],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def close(self) -> None:
        """Wait for a pack merge still running (a process about to exit may also just leave it running)."""
        if self._maintaining is not None:
            self._maintaining.wait()
            self._maintaining = None

    def migrate(self, run_id: str) -> bool:
        """Move run ``run_id`` to layout v2 in one commit of its own, the record unchanged (compare-and-swap:
        the head moved meanwhile, it is done again on the new head). ``False``: it was v2 already."""
        for _ in range(MOVED_TRIES):
            head_id = self._head_id()
            head = self._commit(head_id)
            version = self._version_at(head, run_id)
            if head is None or version is None:
                raise RunNotFound(run_id, f"{self.ref} of {self.path.parent}")
            if self._layout_at(head, run_id) == V2:
                return False
            objects = PackWriter(self.path / "objects")
            try:
                tree = resharded(self._trees, objects, head.tree_id, run_id)
                text = f"interlock: run {run_id} journal layout v1 -> v2"
                commit = objects.commit(tree, [head.id], text, ON_MACHINE.name, ON_MACHINE.email)
                objects.write()
            finally:
                self._trees.pending.clear()
            try:
                self._move_ref(str(commit), str(head_id), run_id, version)
            except (_HeadMoved, VersionConflict):
                continue  # another save came first (perhaps migrating the run itself): look again
            self._last = None
            return True
        raise StoreError(f"cannot move {self.ref}: it kept moving ({MOVED_TRIES} tries)")
