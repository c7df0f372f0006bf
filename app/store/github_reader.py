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
from app.store.archived import ReadsArchives
from app.store.github import GitHubStore, StateFileUnreadable
from app.store.journal import RUNS_FOLDER, graph_path, record_path
from app.store.layout import SHARDED, V1, V2, placed


class GitHubStateReader(GitHubStore):
    """``GitHubStore`` reading at the commit of the last record it loaded, with ``list_files`` for reports."""

    at: str | None = None
    run_id: str | None = None
    layout_read = V1  # the journal layout of the run loaded (app/store/layout.py), read with its record

    def load(self, run_id: str, also: tuple[str, ...] = ()) -> Run:
        """The record, with its graph read in the same call (a status needs it). A record that is not one (anyone
        with push access can rewrite the branch) is one line naming its file, not pydantic's report."""
        try:
            run = super().load(run_id, (graph_path(run_id), *also))
        except ValidationError as exc:
            if exc.title != Run.__name__:  # the API's answer, not the record (app/cli/reports.py says so)
                raise
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the file"
            raise StateFileUnreadable(record_path(run_id), f"{where}: {problem['msg']}") from None
        self.layout_read = self.layouts[run_id]
        self.at, self.run_id = self.heads[run_id], run_id
        return run

    def located(self, path: str) -> str:
        """Where the file of logical ``path`` lies on the branch: what ``git show`` needs."""
        mine = self.run_id is not None and path.startswith(f"{RUNS_FOLDER}/{self.run_id}/")
        return placed(path, self.layout_read) if mine else path

    def read(self, path: str) -> bytes | None:
        """The file of logical ``path``, where the run's layout puts it; in a v2 run, at its v1 place if not
        there: a workflow pinned to an Interlock before v2 still writes its mission records where v1 put them."""
        if path in self.fetched or self.at is None:
            return super().read(path)
        where = self.located(path)
        found = self.api.file(self.repo, where, self.at)
        if found is None and where != path:  # written at its v1 place by a job of an Interlock before v2
            return self.api.file(self.repo, path, self.at)
        return found

    def list_files(self, prefix: str) -> list[str]:
        """The logical paths of the files directly in folder ``prefix`` (``runs/<id>/missions/``) at the
        record's commit; in layout v2 the folder's buckets are listed too, a call each."""
        if self.at is None:
            return []
        folder = prefix.rstrip("/")
        names = self.api.folder(self.repo, folder, self.at) or []
        if self.layout_read == V2 and folder.rsplit("/", 1)[-1] in SHARDED:
            for bucket in self.api.folder(self.repo, folder, self.at, kind="dir") or []:
                names += self.api.folder(self.repo, f"{folder}/{bucket}", self.at) or []
        return sorted(f"{folder}/{name}" for name in names)


class ArchivedGitHubReader(ReadsArchives, GitHubStateReader):
    """``GitHubStateReader`` of a state branch on GitHub, archived runs included (``--repo OWNER/NAME``)."""
