"""The objects of one journal save, written as one pack instead of one loose file each.

A save writes about seven objects (two blobs, the trees on their paths, a commit). As loose objects that is
seven files to create, and file creation is what a save's time goes to on most disks. Here they are hashed
and serialised in memory and written as one pack and its index — two files — before the branch moves, so a
crash leaves either an unreferenced pack or the new head, as before. The store later merges the
packs. The formats are git's own (pack v2, index v2), read by git and libgit2 alike.
https://git-scm.com/docs/gitformat-pack
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import struct
import time
import zlib
from pathlib import Path

import pygit2

KINDS = {"commit": 1, "tree": 2, "blob": 3}
MAX_OFFSET = 2**31  # beyond, an index needs the large-offset table, which this writer does not make


class PackWriter:
    def __init__(self, objects_dir: Path) -> None:
        self.pack_dir = objects_dir / "pack"
        self.objects: dict[bytes, tuple[str, bytes]] = {}

    def add(self, kind: str, data: bytes) -> pygit2.Oid:
        sha = hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).digest()
        self.objects[sha] = (kind, data)
        return pygit2.Oid(raw=sha)

    def blob(self, data: bytes) -> pygit2.Oid:
        return self.add("blob", data)

    def commit(self, tree: pygit2.Oid, parents: list[pygit2.Oid], message: str, name: str, email: str) -> pygit2.Oid:
        who = f"{name} <{email}> {int(time.time())} +0000"
        lines = [f"tree {tree}", *(f"parent {parent}" for parent in parents), f"author {who}", f"committer {who}"]
        return self.add("commit", ("\n".join(lines) + "\n\n" + message).encode())

    def write(self) -> None:
        """The pack, then its index (git trusts a pack once its index exists), each renamed into place."""
        if not self.objects:
            return
        pack, entries = self._pack()
        index = self._index(entries, pack[-20:])
        name = f"pack-{pack[-20:].hex()}"
        self._place(pack, self.pack_dir / f"{name}.pack")
        self._place(index, self.pack_dir / f"{name}.idx")
        self.objects.clear()

    def _pack(self) -> tuple[bytes, list[tuple[bytes, int, int]]]:
        body = bytearray(b"PACK" + struct.pack(">II", 2, len(self.objects)))
        entries = []
        for sha, (kind, data) in self.objects.items():
            if len(body) >= MAX_OFFSET:
                raise ValueError(
                    "a journal save of 2 GiB or more: a pack index v2 without large offsets cannot hold it"
                )
            level = 0 if kind == "tree" else 1  # a tree is mostly object ids, which do not compress
            packed = _object_header(KINDS[kind], len(data)) + zlib.compress(data, level)
            entries.append((sha, zlib.crc32(packed), len(body)))
            body += packed
        body += hashlib.sha1(body).digest()
        return bytes(body), sorted(entries)

    @staticmethod
    def _index(entries: list[tuple[bytes, int, int]], pack_sha: bytes) -> bytes:
        counts = [0] * 256
        for sha, _, _ in entries:
            counts[sha[0]] += 1
        fanout = list(itertools.accumulate(counts))
        body = bytearray(b"\xfftOc" + struct.pack(">I", 2) + struct.pack(">256I", *fanout))
        body += b"".join(sha for sha, _, _ in entries)
        body += b"".join(struct.pack(">I", crc) for _, crc, _ in entries)
        body += b"".join(struct.pack(">I", offset) for _, _, offset in entries)
        body += pack_sha
        return bytes(body + hashlib.sha1(body).digest())

    def _place(self, data: bytes, target: Path) -> None:
        """Written under a unique temporary name (``tmp_*``, which ``git gc`` cleans), then renamed: two
        writers of the same pack (identical saves) each rename a whole file."""
        self.pack_dir.mkdir(parents=True, exist_ok=True)
        temporary = self.pack_dir / f"tmp_{target.suffix[1:]}_{secrets.token_hex(8)}"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)  # read-only as git makes them,
        with os.fdopen(handle, "wb") as out:  # from the start: no chmod, one change of the folder fewer
            out.write(data)
        os.replace(temporary, target)


def _object_header(kind: int, size: int) -> bytes:
    """Type and size of a packed object: 3 type bits and 4 size bits, then 7 size bits a byte."""
    first = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(first | 0x80)
        first = size & 0x7F
        size >>= 7
    out.append(first)
    return bytes(out)
