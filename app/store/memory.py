"""An in-memory journal with the same contract: for tests and the in-process benchmark."""

from __future__ import annotations

from app.engine.errors import RunNotFound, VersionConflict
from app.engine.record import Run
from app.store.journal import encode_record, record_path


class MemoryStore:
    """Every version of every record, kept in memory.

    Records are immutable once built (a transition makes a new one), so with ``serialize=False`` the
    journal keeps the versions themselves, as a persistent structure; with ``serialize=True`` (the
    default) it also encodes each version as the git journal would, to count bytes.
    """

    def __init__(self, serialize: bool = True) -> None:
        self.files: dict[str, bytes] = {}
        self.runs: dict[str, Run] = {}
        self.versions: list[Run] = []
        self.serialize = serialize
        self.writes = 0
        self.bytes_written = 0

    def load(self, run_id: str) -> Run:
        if run_id not in self.runs:
            raise RunNotFound(run_id, "memory")
        return self.runs[run_id]

    def save(self, run: Run, expected: int | None, files: dict[str, bytes] | None = None, message: str = "") -> None:
        current = self.runs.get(run.id)
        found = current.version if current else None
        if found != expected:
            raise VersionConflict(run.id, expected, found)
        self.runs[run.id] = run
        self.versions.append(run)
        self.files.update(files or {})
        self.writes += 1
        if self.serialize:
            record = encode_record(run)
            self.files[record_path(run.id)] = record
            self.bytes_written += len(record) + sum(len(data) for data in (files or {}).values())

    def read(self, path: str) -> bytes | None:
        return self.files.get(path)

    def list_runs(self) -> list[Run]:
        return list(self.runs.values())

    def list_files(self, prefix: str) -> list[str]:
        return sorted(path for path in self.files if path.startswith(prefix))
