"""A run's v1 folders rebuilt as v2 buckets (``app/store/layout.py``), as trees of existing blobs.

Why trees and not files: a migration moves every mission record, order and events file of a run, and in git a
move is a new tree naming the same blob. Here the entries of each v1 folder are grouped by bucket byte for byte
(mode, name, blob id), so no blob is read or written and every hash the chain recorded (SPEC J6) stays true;
the new trees go into the save's pack and the caller's commit, one compare-and-swap, so a kill at any moment
leaves the v1 run or the v2 run (SPEC J2's compare-and-swap; C5: nothing lost), never a mix.
"""

from __future__ import annotations

import re

import pygit2

from app.store.journal import RUNS_FOLDER
from app.store.layout import SHARDED, V2, bucket, layout_file, layout_path
from app.store.packwriter import PackWriter
from app.store.treecache import Entries, TreeCache

_NUMBER = re.compile(rb"\d+")


def resharded(trees: TreeCache, objects: PackWriter, root: pygit2.Oid | None, run_id: str) -> pygit2.Oid:
    """The tree ``root`` with run ``run_id``'s numbered folders in buckets and its ``layout.json`` saying v2.
    The trees made are kept in ``trees.pending`` until the pack is written, for the save's own splices."""
    top = trees.entries(root)
    runs = trees.entries(top.subtree(RUNS_FOLDER.encode()))
    run = trees.entries(runs.subtree(run_id.encode()))
    for folder in SHARDED:
        old = run.subtree(folder.encode())
        if old is not None:
            run.put(folder.encode(), _in_buckets(trees, objects, trees.entries(old)), folder=True)
    run.put(layout_path(run_id).rsplit("/", 1)[-1].encode(), objects.blob(layout_file(V2)), folder=False)
    runs.put(run_id.encode(), _tree(trees, objects, run), folder=True)
    top.put(RUNS_FOLDER.encode(), _tree(trees, objects, runs), folder=True)
    return _tree(trees, objects, top)


def _in_buckets(trees: TreeCache, objects: PackWriter, folder: Entries) -> pygit2.Oid:
    """A v1 folder's files in buckets by their number; an entry with no number (none is written) stays put."""
    kept = Entries([], [])
    buckets: dict[str, Entries] = {}
    for key, chunk in zip(folder.keys, folder.chunks, strict=True):
        number = _NUMBER.match(key)
        if number is None or key.endswith(b"/"):
            kept.keys.append(key)
            kept.chunks.append(chunk)
            continue
        group = buckets.setdefault(bucket(int(number.group())), Entries([], []))
        group.keys.append(key)  # a subsequence of git's order is in git's order
        group.chunks.append(chunk)
    for name, group in buckets.items():
        kept.put(name.encode(), _tree(trees, objects, group), folder=True)
    return _tree(trees, objects, kept)


def _tree(trees: TreeCache, objects: PackWriter, entries: Entries) -> pygit2.Oid:
    oid = objects.add("tree", entries.data())
    trees.pending[oid] = entries
    return oid
