"""The journal interface and its file layout (ARCHITECTURE "Journal layout").

``runs/<run-id>.json`` holds the record; ``runs/<run-id>/graph.json`` the graph it runs on;
``runs/<run-id>/missions/<seq>-<stage>.json`` the full record of each mission, written once;
``runs/<run-id>/decision.md`` the latest decision file; ``runs/<run-id>/events/<version>.json`` the event of
each transition (SPEC J6); ``runs/<run-id>/graphs/<hash>.json`` a graph the run left by an upgrade (SPEC J7);
``board.md`` every run at a glance. A save is compare-and-swap on the version read, so of two writers exactly
one wins. These are the *logical* paths every caller and the hash chain use; in journal layout v2 a store keeps
the numbered files of ``missions/``, ``orders/`` and ``events/`` in buckets of 100 (``app/store/layout.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

import pydantic_core

from app.engine.record import Run

STATE_BRANCH = "interlock/state"
RUNS_FOLDER = "runs"  # every run's record, each beside a folder of the run's other files
RECORD_SUFFIX = ".json"


def record_path(run_id: str) -> str:
    return f"{RUNS_FOLDER}/{run_id}{RECORD_SUFFIX}"


def missions_folder(run_id: str) -> str:
    """The folder of a run's mission records, ending in ``/``: the prefix to list them by."""
    return f"{RUNS_FOLDER}/{run_id}/missions/"


def orders_folder(run_id: str) -> str:
    """The folder of a run's orders (``order_path``), ending in ``/``."""
    return f"{RUNS_FOLDER}/{run_id}/orders/"


def numbered(seq: int) -> str:
    """How the file of mission ``seq`` begins, in ``missions_folder`` and ``orders_folder`` alike: a reader
    that knows the mission's number but not its stage finds its file by this prefix."""
    return f"{seq:04d}-"


def mission_path(run_id: str, seq: int, stage: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in stage)
    return f"{missions_folder(run_id)}{numbered(seq)}{safe}.json"


def order_path(run_id: str, seq: int, stage: str) -> str:
    """What the engine asked a job to do for mission ``seq``: kind, prompt, check command (written with the
    transition that dispatched it, so the job runs exactly the prompt the engine assembled)."""
    return mission_path(run_id, seq, stage).replace(missions_folder(run_id), orders_folder(run_id), 1)


def graph_path(run_id: str) -> str:
    """The graph a run was started on, stored with its first record: the run goes on on it, whatever the
    graph files say later."""
    return f"runs/{run_id}/graph.json"


def events_folder(run_id: str) -> str:
    """The folder of a run's transitions (SPEC J6), ending in ``/``: one file per saved version, written once."""
    return f"{RUNS_FOLDER}/{run_id}/events/"


def event_path(run_id: str, version: int) -> str:
    """The event that made ``version`` of the record, with the hash of that version: what ``verify`` replays."""
    return f"{events_folder(run_id)}{version:06d}.json"


def pinned_graph_path(run_id: str, content_hash: str) -> str:
    """A graph the run ran on before an upgrade (SPEC J7), kept by its content hash so a replay finds it."""
    return f"{RUNS_FOLDER}/{run_id}/graphs/{content_hash}.json"


def decision_path(run_id: str) -> str:
    return f"runs/{run_id}/decision.md"


BOARD_PATH = "board.md"
BOARD_INDEX_PATH = "board.json"  # the rows board.md is rendered from (app/store/board_index.py)


def encode_record(run: Run) -> bytes:
    """The record as the journal stores it. A transition encodes one record three times (the hash of the version
    before, the hash in its events file, the save): the last few encodings are kept by identity, records being
    never changed once built (SPEC J6 hashes the same bytes either way)."""
    for known, data in _ENCODED:
        if known is run:
            return data
    data = run.journal_json() + b"\n"
    _ENCODED.insert(0, (run, data))
    del _ENCODED[ENCODED_KEPT:]
    return data


ENCODED_KEPT = 4
_ENCODED: list[tuple[Run, bytes]] = []  # newest first


def encode_json(data: Any) -> bytes:
    """A mission record or any journal file as indented UTF-8 JSON, like the run record.

    pydantic-core's encoder is used rather than ``json.dumps``: with an indent, the standard library
    falls back to its pure-Python encoder, five times slower on the hot path of every mission."""
    encoded: bytes = pydantic_core.to_json(data, indent=1, fallback=str)
    return encoded + b"\n"


class RunStore(Protocol):
    """What a run driver needs of a journal (``app/runner/driver.py``): every store has it, GitHub's too."""

    def load(self, run_id: str) -> Run:
        """The stored record; ``RunNotFound`` if there is none."""
        ...

    def save(self, run: Run, expected: int | None, files: dict[str, bytes] | None = None, message: str = "") -> None:
        """Store ``run`` (and ``files``) if the stored version is still ``expected`` (``None``: new run);
        ``VersionConflict`` otherwise. All of it lands, or none of it."""
        ...

    def read(self, path: str) -> bytes | None: ...


class FileReader(Protocol):
    """What a report of one run reads beside its record: any store, GitHub's too (``interlock journey``)."""

    def read(self, path: str) -> bytes | None: ...

    def list_files(self, prefix: str) -> list[str]: ...


class JournalStore(RunStore, Protocol):
    """A journal that can also be listed: the stores of a local repository (boards, reports)."""

    def list_runs(self) -> list[Run]: ...

    def list_files(self, prefix: str) -> list[str]: ...


def action_path(run_id: str, key: str) -> str:
    """A person's action on a run from the web board (who, what, when), written once with its transition."""
    return f"{RUNS_FOLDER}/{run_id}/actions/{key}.json"
