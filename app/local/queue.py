"""A team's queue on this machine (SPEC U5): a team runs at most ``concurrency`` local runs at once, across
processes; a further ``interlock run`` of the team waits in line, is told its place, and starts when a run of
the team ends, whatever way it ends.

Everything lives in the repository's git folder, beside the runs' locks (``.git/interlock/queues/<team>/``):

- ``slot-<n>.lock``, one per place among the running: a process driving a run of the team holds one with
  ``flock`` for as long as it drives it. The kernel drops the lock when the process ends, however it ends
  (done, stopped at a gate, failed, Ctrl-C, ``kill -9``), so a place is never lost to a dead process and no
  heartbeat is needed.
- ``line.json``, the processes waiting, in order, changed only under the lock of ``line.lock`` and written
  by an atomic rename. Each waiter holds ``waiting/<ticket>.lock`` while it waits: an entry whose lock
  nobody holds is a waiter that died, and leaves the line the next time the line is read.

Only the head of the line takes a free place, so runs start in the order they asked.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from app.engine.errors import InterlockError

POLL_S = 0.1  # how often a waiter looks for a free place: a run lasts minutes, the wait costs nothing
Say = Callable[[str], None]


class TeamFull(InterlockError):
    """``--no-wait`` and every place of the team taken: nothing was started."""


@dataclass
class Held:
    """A place among the running, held by this process until ``release``."""

    handle: IO[str]
    number: int

    def release(self) -> None:
        self.handle.close()  # closing the file drops the flock


def queue_folder(git_dir: Path, team: str) -> Path:
    """The team's folder; a local team's name is free text, so only its safe characters name the folder."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in team).lstrip(".") or "_"
    return git_dir / "interlock" / "queues" / safe


@contextmanager
def team_place(folder: Path, team: str, concurrency: int, say: Say, wait: bool = True) -> Iterator[int]:
    """Hold one of the ``concurrency`` places of ``team`` while the body runs, after waiting in line for it
    (``wait``) or refusing at once (``TeamFull``); ``say`` tells the place in line each time it changes."""
    folder.mkdir(parents=True, exist_ok=True)
    held = _wait_for_place(folder, team, concurrency, say, wait)
    try:
        yield held.number
    finally:
        held.release()


def _wait_for_place(folder: Path, team: str, concurrency: int, say: Say, wait: bool) -> Held:
    with _in_line(folder) as ticket:
        told: int | None = None
        while True:
            held, place = _try_place(folder, ticket, concurrency)
            if held is not None:
                if told is not None:
                    say(f"team {team}: a place is free, the run starts")
                return held
            if not wait:
                raise TeamFull(
                    f"team {team} already runs {concurrency} run(s) at once (concurrency {concurrency}; "
                    f"{_holders(folder, concurrency)}): nothing was started; leave out --no-wait to wait in line"
                )
            if place != told:
                say(
                    f"team {team} runs {concurrency} run(s) at once ({_holders(folder, concurrency)}): "
                    f"waiting, number {place} in line"
                )
                told = place
            time.sleep(POLL_S)


@contextmanager
def _in_line(folder: Path) -> Iterator[str]:
    """Join the end of the line, holding this waiter's own lock; leave it when done (or when dying)."""
    ticket = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(3)}"
    mine = folder / "waiting" / f"{ticket}.lock"
    mine.parent.mkdir(exist_ok=True)
    with mine.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(str(os.getpid()))
        handle.flush()
        _change_line(folder, lambda line: [*line, {"ticket": ticket, "pid": os.getpid()}])
        try:
            yield ticket
        finally:
            _change_line(folder, lambda line: [entry for entry in line if entry.get("ticket") != ticket])
            mine.unlink(missing_ok=True)


def _try_place(folder: Path, ticket: str, concurrency: int) -> tuple[Held | None, int]:
    """A free place if this waiter heads the line and one is free; else its place in line (1 = next)."""
    with _line_lock(folder):
        line = _live(folder, _read_line(folder))
        if all(entry.get("ticket") != ticket for entry in line):  # the file was lost or damaged: join again
            line.append({"ticket": ticket, "pid": os.getpid()})
        _write_line(folder, line)
        place = next(n for n, entry in enumerate(line, 1) if entry.get("ticket") == ticket)
        if place != 1:
            return None, place
        for number in range(concurrency):
            held = _take(folder / f"slot-{number}.lock", number)
            if held is not None:
                return held, 0
        return None, place


def _take(path: Path, number: int) -> Held | None:
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return Held(handle, number)


def _holders(folder: Path, concurrency: int) -> str:
    """Who holds the places, by process id, for the person waiting: ``running: pid 12, pid 34``."""
    pids = [pid for number in range(concurrency) if (pid := lock_holder(folder / f"slot-{number}.lock"))]
    return f"running: {', '.join(f'pid {pid}' for pid in pids)}" if pids else "its places are being taken"


def lock_holder(path: Path) -> str | None:
    """The pid written in a lock file whose lock is held, without taking it for more than an instant."""
    if not path.exists():
        return None
    with path.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "?"
    return None


def _live(folder: Path, line: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries whose waiter still holds its lock: a waiter killed while waiting leaves the line."""
    kept = []
    for entry in line:
        path = folder / "waiting" / f"{entry.get('ticket')}.lock"
        if path.exists() and lock_holder(path) is not None:
            kept.append(entry)
        else:
            path.unlink(missing_ok=True)
    return kept


@contextmanager
def _line_lock(folder: Path) -> Iterator[None]:
    with (folder / "line.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # held for a read and a rename: microseconds
        yield


def _change_line(folder: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    with _line_lock(folder):
        _write_line(folder, edit(_read_line(folder)))


def _read_line(folder: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads((folder / "line.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # none yet, or damaged by hand: each waiter joins again on its next look
    return [entry for entry in data if isinstance(entry, dict)] if isinstance(data, list) else []


def _write_line(folder: Path, line: list[dict[str, Any]]) -> None:
    temporary = folder / f"line.json.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(line), encoding="utf-8")
    os.replace(temporary, folder / "line.json")


def waiting(folder: Path) -> list[int]:
    """The process ids waiting in line, in order (for views and tests)."""
    with _line_lock(folder):
        return [int(entry["pid"]) for entry in _live(folder, _read_line(folder)) if isinstance(entry.get("pid"), int)]
