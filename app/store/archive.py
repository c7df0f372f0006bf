"""Archives of ended runs on the state branch (issue 27: the state branch stays small).

Why: a run leaves a file per mission and per transition in ``runs/<id>/``; a branch of thousands of ended runs
holds hundreds of thousands of files that no writer touches again. ``interlock archive`` replaces the folder of
a run that ended (``done`` or ``cancelled``) more than N days ago with ONE file, ``archive/<id>.jsonl.gz``: a
gzip of JSON lines ``{"path": logical path, "data": base64 of the bytes}``, every file byte for byte, in the
same compare-and-swap commit. The record ``runs/<id>.json`` stays where it is (one file), so listings, the
board and ``status`` find the run as before. ``ArchivedReader`` reads a run's files from its archive when the
folder is gone: the hash chain (SPEC J6) is over the same bytes, so ``verify`` answers as before archiving.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.engine.errors import InterlockError
from app.engine.record import Run, Status
from app.store.journal import RUNS_FOLDER, FileReader
from app.store.layout import run_of

ARCHIVE_FOLDER = "archive"
ENDED = (Status.DONE, Status.CANCELLED)  # a run in any other status may move again (resume, approve, retry)
DEFAULT_DAYS = 30


class ArchiveUnreadable(InterlockError):
    """An archive file that is not what ``pack`` writes: named, with what is wrong, never a traceback."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} is not an Interlock archive: {reason}")
        self.path = path


def archive_path(run_id: str) -> str:
    return f"{ARCHIVE_FOLDER}/{run_id}.jsonl.gz"


def run_folder(run_id: str) -> str:
    """The folder archiving replaces, ending in ``/`` (the record beside it stays)."""
    return f"{RUNS_FOLDER}/{run_id}/"


def archived_runs(paths: Iterable[str]) -> set[str]:
    """The runs whose archives are among ``paths`` (a listing of ``archive/``)."""
    folder, suffix = archive_path("").split("/")
    return {
        path[len(folder) + 1 : -len(suffix)]
        for path in paths
        if path.startswith(folder + "/") and path.endswith(suffix)
    }


def due(runs: Iterable[Run], now: datetime, days: int, archived: Collection[str] = ()) -> list[str]:
    """The runs to archive: ended, last written more than ``days`` days before ``now``, and not ``archived``
    already; ``days`` 0 archives none."""
    if days < 0:
        raise ValueError(f"the age to archive after must be 0 (never) or more days, not {days}")
    if days == 0:
        return []
    limit = now - timedelta(days=days)
    return sorted(run.id for run in runs if run.status in ENDED and run.updated_at < limit and run.id not in archived)


def pack(files: dict[str, bytes]) -> bytes:
    """The archive of ``files`` (logical path -> bytes), sorted, so the same files make the same bytes:
    archiving twice writes the same blob."""
    lines = (json.dumps({"path": path, "data": base64.b64encode(files[path]).decode()}) for path in sorted(files))
    return gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0)


def unpack(data: bytes, where: str) -> dict[str, bytes]:
    """The files an archive holds; ``ArchiveUnreadable`` naming ``where`` and the first problem otherwise."""
    try:
        text = gzip.decompress(data).decode()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ArchiveUnreadable(where, f"not gzip'd UTF-8 ({exc})") from None
    files: dict[str, bytes] = {}
    for number, line in enumerate(text.splitlines(), 1):
        try:
            entry = json.loads(line)
            files[entry["path"]] = base64.b64decode(entry["data"], validate=True)
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise ArchiveUnreadable(where, f'line {number} is not {{"path": ..., "data": base64}}') from None
    return files


@dataclass(frozen=True)
class Plain:
    """A reader made of a store's own ``read`` and ``list_files``, before archives: what ``ArchivedReader``
    wraps when the store itself is to read archives (``app/store/archived.py``)."""

    read: Callable[[str], bytes | None]
    list_files: Callable[[str], list[str]]


class ArchivedReader:
    """A reader that finds the files of an archived run in its archive, as if its folder were still there."""

    def __init__(self, inner: FileReader) -> None:
        self.inner = inner
        self._opened: dict[str, dict[str, bytes]] = {}

    def archived(self, run_id: str) -> dict[str, bytes] | None:
        """The files of ``run_id``'s archive, or ``None`` when it has none. The last archive opened is kept: a
        report reads many files of one run, and an archive never changes once written."""
        if run_id not in self._opened:
            data = self.inner.read(archive_path(run_id))
            if data is None:
                return None
            self._opened = {run_id: unpack(data, archive_path(run_id))}
        return self._opened[run_id]

    def read(self, path: str) -> bytes | None:
        found = self.inner.read(path)
        run_id = run_of(path)
        if found is not None or run_id is None:
            return found
        files = self.archived(run_id)
        return None if files is None else files.get(path)

    def list_files(self, prefix: str) -> list[str]:
        listed = set(self.inner.list_files(prefix))
        run_id = run_of(prefix)
        files = self.archived(run_id) if run_id is not None else None
        listed.update(path for path in files or () if path.startswith(prefix))
        return sorted(listed)
