"""A save's new trees, made by splicing the changed entries into the previous save's trees.

Why: a run's ``missions/`` and ``events/`` folders gain a file with each transition. Rebuilding such a folder's
tree from its parsed entries at every save cost time in Python proportional to the run's length (about 10 ms a
save after 3,000 missions). Here a tree is kept as its entries exactly as git stores them (``<mode> <name>\\0<id>``,
in git's order), and a save copies the lists, inserts or replaces its few entries by binary search and joins the
bytes: the work left that grows with the folder is a copy, a join and a hash, all in C. A tree read from the
branch is parsed once; the trees a save makes are kept for the next save, which starts from them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict

import pygit2

TREE_MODE = b"40000"  # how git writes a folder's mode in a tree (no leading zero)
BLOB_MODE = b"100644"
KEPT = 32  # trees remembered: a save makes about five, so the last few saves' trees are at hand


def check_name(name: bytes) -> None:
    """A name git refuses (empty, ``.``, ``..``, ``.git``, with a slash or a NUL) raises ``ValueError``."""
    if name in (b"", b".", b"..", b".git") or b"/" in name or b"\0" in name:
        raise ValueError(f"{name!r} cannot name a file in a git tree")


class Entries:
    """One tree's entries: ``keys`` sort as git sorts (a folder's name as if it ended in ``/``) and ``chunks``
    are the entries' bytes as the tree object stores them, in the same order."""

    __slots__ = ("chunks", "keys")

    def __init__(self, keys: list[bytes], chunks: list[bytes]) -> None:
        self.keys = keys
        self.chunks = chunks

    @classmethod
    def parse(cls, raw: bytes) -> Entries:
        """The entries of a tree object's data (any tree git wrote: modes and names are kept byte for byte)."""
        keys: list[bytes] = []
        chunks: list[bytes] = []
        position = 0
        while position < len(raw):
            space = raw.index(b" ", position)
            nul = raw.index(b"\0", space)
            name = raw[space + 1 : nul]
            keys.append(name + b"/" if raw[position:space] == TREE_MODE else name)
            chunks.append(raw[position : nul + 21])
            position = nul + 21
        return cls(keys, chunks)

    def copy(self) -> Entries:
        return Entries(list(self.keys), list(self.chunks))

    def subtree(self, name: bytes) -> pygit2.Oid | None:
        """The id of the folder ``name`` in this tree, if there is one."""
        index = self._find(name + b"/")
        return pygit2.Oid(raw=self.chunks[index][-20:]) if index is not None else None

    def put(self, name: bytes, oid: pygit2.Oid, folder: bool) -> None:
        """Add or replace the entry ``name`` (a file or a folder of that name is replaced either way)."""
        check_name(name)
        for key in (name, name + b"/"):
            index = self._find(key)
            if index is not None:
                del self.keys[index], self.chunks[index]
        key = name + b"/" if folder else name
        index = bisect_left(self.keys, key)
        self.keys.insert(index, key)
        self.chunks.insert(index, (TREE_MODE if folder else BLOB_MODE) + b" " + name + b"\0" + oid.raw)

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def _find(self, key: bytes) -> int | None:
        index = bisect_left(self.keys, key)
        return index if index < len(self.keys) and self.keys[index] == key else None


class TreeCache:
    """The entries of recently read or written trees, by id; a tree not here is read from the repository."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.kept: OrderedDict[pygit2.Oid, Entries] = OrderedDict()
        # trees a save made that are not in the repository yet (its pack unwritten), however many: a migration
        # makes one per bucket (app/store/reshard.py); the store empties it once the pack is written
        self.pending: dict[pygit2.Oid, Entries] = {}

    def entries(self, oid: pygit2.Oid | None) -> Entries:
        """A copy of the entries of tree ``oid`` (empty for ``None`` or an object that is no tree), to change."""
        if oid is None:
            return Entries([], [])
        found = self.kept.get(oid) or self.pending.get(oid)
        if found is None:
            obj = self.repo.get(oid)
            if not isinstance(obj, pygit2.Tree):
                return Entries([], [])
            found = Entries.parse(obj.read_raw())
            self.remember(oid, found)
        return found.copy()

    def remember(self, oid: pygit2.Oid, entries: Entries) -> None:
        self.kept[oid] = entries
        self.kept.move_to_end(oid)
        while len(self.kept) > KEPT:
            self.kept.popitem(last=False)
