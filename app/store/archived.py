"""The stores the commands read runs through, reading archived runs too (``app/store/archive.py``).

A store's own ``read`` and ``list_files`` see the branch as it is; these see an archived run's files where
they were before archiving, so every report, the driver's graph and ``verify`` need no change. Writing is the
store's own: an archived run ended, and nothing writes an ended run's folder again. The GitHub reader's own
class stands beside it, in ``app/store/github_reader.py``: a local command loads no GitHub client.
"""

from __future__ import annotations

from typing import cast

from app.store.archive import ArchivedReader, Plain
from app.store.gitstore import GitStore
from app.store.journal import FileReader


class ReadsArchives:
    """A store's ``read`` and ``list_files``, archived runs included: put before the store's class among the
    bases, whose own ``read`` and ``list_files`` (next in the method order) see the branch as it is."""

    _archives: ArchivedReader | None = None

    def archives(self) -> ArchivedReader:
        if self._archives is None:
            own = cast(FileReader, super())  # the store's own reads, before archives
            self._archives = ArchivedReader(Plain(own.read, own.list_files))
        return self._archives

    def read(self, path: str) -> bytes | None:
        return self.archives().read(path)

    def list_files(self, prefix: str) -> list[str]:
        return self.archives().list_files(prefix)


class ArchivedGitStore(ReadsArchives, GitStore):
    """``GitStore`` of a local state branch, archived runs included (``interlock status|verify|journey``)."""
