"""Archive an ended run on a local state branch: its folder out, one archive file in, in one commit.

The commit's tree is the head's with ``runs/<id>/`` dropped and ``archive/<id>.jsonl.gz`` added
(``app/store/archive.py``); the branch moves by ``git update-ref NEW OLD``, git's compare-and-swap
(https://git-scm.com/docs/git-update-ref), so a save that came first makes this look again on the new head and
nothing a writer saved is lost. Archiving twice changes nothing: the second finds no folder.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pygit2

from app.engine.record import Run
from app.gitaccess import ON_MACHINE, on_machine_env, run_git
from app.store.archive import ARCHIVE_FOLDER, ENDED, archive_path, archived_runs, due, pack, unpack
from app.store.gitstore_read import GitReader
from app.store.journal import RUNS_FOLDER, STATE_BRANCH, record_path
from app.store.layout import logical

TRIES = 20


class ArchiveRefused(Exception):
    """A run that must not be archived (no record, still live): the caller says why in one line."""


def _files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in tree:
        obj = repo[entry.id]
        path = f"{prefix}{entry.name}"
        if isinstance(obj, pygit2.Tree):
            found.update(_files(repo, obj, path + "/"))
        elif isinstance(obj, pygit2.Blob):
            found[logical(path)] = obj.data
    return found


def _subtree(repo: pygit2.Repository, tree: pygit2.Tree, name: str) -> pygit2.Tree | None:
    if name not in tree:
        return None
    obj = repo[tree[name].id]
    return obj if isinstance(obj, pygit2.Tree) else None


def _archived_tree(repo: pygit2.Repository, root: pygit2.Tree, run_id: str) -> pygit2.Oid | None:
    """The tree of ``root`` with run ``run_id`` archived, or ``None`` when it has no folder (archived already)."""
    runs = _subtree(repo, root, RUNS_FOLDER)
    folder = _subtree(repo, runs, run_id) if runs is not None else None
    if runs is None or folder is None:
        return None
    files = _files(repo, folder, f"{RUNS_FOLDER}/{run_id}/")
    old_archive = _subtree(repo, root, ARCHIVE_FOLDER)
    name = archive_path(run_id).rsplit("/", 1)[1]
    if old_archive is not None and name in old_archive:  # a file written after the run was archived (a late
        earlier = repo[old_archive[name].id]  # mission record): packed with what the archive holds, never over it
        assert isinstance(earlier, pygit2.Blob)
        files = {**files, **unpack(earlier.data, archive_path(run_id))}
    blob = repo.create_blob(pack(files))
    runs_builder = repo.TreeBuilder(runs)
    runs_builder.remove(run_id)
    archive_builder = repo.TreeBuilder(old_archive) if old_archive is not None else repo.TreeBuilder()
    archive_builder.insert(name, blob, pygit2.enums.FileMode.BLOB)
    top = repo.TreeBuilder(root)
    top.insert(RUNS_FOLDER, runs_builder.write(), pygit2.enums.FileMode.TREE)
    top.insert(ARCHIVE_FOLDER, archive_builder.write(), pygit2.enums.FileMode.TREE)
    return top.write()


def _ended(repo: pygit2.Repository, root: pygit2.Tree, run_id: str) -> None:
    try:
        data = repo[root[record_path(run_id)].id]
    except KeyError:
        raise ArchiveRefused(f"run {run_id!r} is not on the state branch") from None
    assert isinstance(data, pygit2.Blob)
    run = Run.from_journal(data.data)
    if run.status not in ENDED:
        raise ArchiveRefused(f"run {run_id!r} is {run.status.value}, not ended: only done or cancelled runs archive")


def due_on_branch(path: Path, now: datetime, days: int, branch: str = STATE_BRANCH) -> list[str]:
    """The runs of ``branch`` in the repository at ``path`` to archive at ``days`` (``archive.due``)."""
    store = GitReader(path, branch)
    return due(store.list_runs(), now, days, archived_runs(store.list_files(f"{ARCHIVE_FOLDER}/")))


def archive_run(path: Path, run_id: str, branch: str = STATE_BRANCH) -> bool:
    """Archive ``run_id`` on ``branch`` of the repository at ``path``; ``False``: it was archived already."""
    repo = pygit2.Repository(str(path))
    ref = f"refs/heads/{branch}"
    for _ in range(TRIES):
        try:
            head = repo.revparse_single(ref)
        except KeyError:
            raise ArchiveRefused(f"{branch} is not a branch of {path}: no runs to archive") from None
        assert isinstance(head, pygit2.Commit)
        _ended(repo, head.tree, run_id)
        tree = _archived_tree(repo, head.tree, run_id)
        if tree is None:
            return False
        who = pygit2.Signature(ON_MACHINE.name, ON_MACHINE.email)
        commit = repo.create_commit(None, who, who, f"interlock: archive run {run_id}", tree, [head.id])
        moved = run_git(["update-ref", ref, str(commit), str(head.id)], Path(repo.path), on_machine_env())
        if moved.returncode == 0:
            return True
    raise ArchiveRefused(f"cannot move {ref}: it kept moving ({TRIES} tries)")
