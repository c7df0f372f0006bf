"""A run's files on the state branch of a repository on GitHub, read at one commit, for the reports
(``interlock status|journey|money --repo OWNER/NAME``).

A report reads the record, then the graph, the mission records and perhaps a gate's answer. Read one by one at
the branch's head, a save between two reads would mix two states of the run; so every file is read at the
commit the record was read from, and the folder of mission records is listed at that commit too. Read-only:
nothing here writes.
"""

from __future__ import annotations

from pydantic import ValidationError

from app.engine.record import Run
from app.store.github import GitHubStore, StateFileUnreadable
from app.store.journal import graph_path, record_path


class GitHubStateReader(GitHubStore):
    """``GitHubStore`` reading at the commit of the last record it loaded, with ``list_files`` for reports."""

    at: str | None = None

    def load(self, run_id: str, also: tuple[str, ...] = ()) -> Run:
        """The record, with its graph read in the same call (a status needs it). A record that is not one (anyone
        with push access can rewrite the branch) is one line naming its file, not pydantic's report."""
        try:
            run = super().load(run_id, (graph_path(run_id), *also))
        except ValidationError as exc:
            if exc.title != Run.__name__:  # the API's answer, not the record (app/cli_remote.py says so)
                raise
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the file"
            raise StateFileUnreadable(record_path(run_id), f"{where}: {problem['msg']}") from None
        self.at = self.heads[run_id]
        return run

    def read(self, path: str) -> bytes | None:
        if path in self.fetched or self.at is None:
            return super().read(path)
        return self.api.file(self.repo, path, self.at)

    def list_files(self, prefix: str) -> list[str]:
        """The files directly in folder ``prefix`` (``runs/<id>/missions/``) at the record's commit."""
        if self.at is None:
            return []
        folder = prefix.rstrip("/")
        return sorted(f"{folder}/{name}" for name in self.api.folder(self.repo, folder, self.at) or [])
