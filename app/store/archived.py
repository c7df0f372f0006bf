"""The stores the commands read runs through, reading archived runs too (``app/store/archive.py``).

A store's own ``read`` and ``list_files`` see the branch as it is; these see an archived run's files where
they were before archiving, so every report, the driver's graph and ``verify`` need no change. Writing is the
store's own: an archived run ended, and nothing writes an ended run's folder again.
"""

from __future__ import annotations

from app.store.archive import ArchivedReader, Plain
from app.store.github_reader import GitHubStateReader
from app.store.gitstore import GitStore


class ArchivedGitStore(GitStore):
    """``GitStore`` of a local state branch, archived runs included (``interlock status|verify|journey``)."""

    _archives: ArchivedReader | None = None

    def archives(self) -> ArchivedReader:
        if self._archives is None:
            plain = Plain(lambda p: GitStore.read(self, p), lambda p: GitStore.list_files(self, p))
            self._archives = ArchivedReader(plain)
        return self._archives

    def read(self, path: str) -> bytes | None:
        return self.archives().read(path)

    def list_files(self, prefix: str) -> list[str]:
        return self.archives().list_files(prefix)


class ArchivedGitHubReader(GitHubStateReader):
    """``GitHubStateReader`` of a state branch on GitHub, archived runs included (``--repo OWNER/NAME``)."""

    _archives: ArchivedReader | None = None

    def archives(self) -> ArchivedReader:
        if self._archives is None:
            plain = Plain(lambda p: GitHubStateReader.read(self, p), lambda p: GitHubStateReader.list_files(self, p))
            self._archives = ArchivedReader(plain)
        return self._archives

    def read(self, path: str) -> bytes | None:
        return self.archives().read(path)

    def list_files(self, prefix: str) -> list[str]:
        return self.archives().list_files(prefix)
