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
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from app.engine.errors import InterlockError
from app.local import leftovers

POLL_S = 0.1  # how often a waiter looks for a free place: a run lasts minutes, the wait costs nothing
TICKET = re.compile(r"[0-9]{20}-[0-9]+-[0-9a-f]{6}")  # what _in_line writes; anything else in line.json is damage
SLOT = re.compile(r"slot-([0-9]+)\.lock")
Say = Callable[[str], None]


class TeamFull(InterlockError):
    """``--no-wait`` and every place of the team taken: nothing was started."""


@dataclass
class Held:
    """A place among the running, held by this process until ``release``."""

    handle: IO[str]
    number: int
    stopped: list[int] = field(default_factory=list)  # a dead holder's agent stopped on taking this place

    def release(self) -> None:
        """Give the place back; emptied first, so that the next holder finds no agent to stop (only a holder
        that died leaves its agent file written in the place)."""
        try:
            self.handle.seek(0)
            self.handle.truncate()
        finally:
            self.handle.close()  # closing the file drops the flock


class QueueFileProblem(InterlockError):
    """A file of the queue's folder is not what Interlock keeps there (made by hand): named, nothing started."""

    def __init__(self, path: Path, problem: OSError) -> None:
        super().__init__(
            f"the team queue's file {path} cannot be used ({problem.strerror or problem}): nothing was started; "
            "remove it (Interlock makes it again)"
        )


def queue_folder(git_dir: Path, team: str) -> Path:
    """The team's folder. A local team's name is free text, so every byte other than an ASCII letter, digit,
    ``-`` or ``_`` is written ``%XX``: two names never share a folder (``a/b`` is ``a%2Fb``, ``a_b`` stays)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else _escaped(c) for c in team) or "%"
    return git_dir / "interlock" / "queues" / safe


def _escaped(character: str) -> str:
    return "".join(f"%{byte:02X}" for byte in character.encode("utf-8", "surrogateescape"))


class TeamPlace:
    """Hold one of the ``concurrency`` places of ``team`` while the body runs, after waiting in line for it
    (``wait``) or refusing at once (``TeamFull``); ``say`` tells the place in line each time it changes.
    ``agent`` is the file where the run's runner writes down its agent (app/local/leftovers.py): written in
    the place, so that whoever takes the place after a holder that died stops the agent it left running."""

    def __init__(
        self, folder: Path, team: str, concurrency: int, say: Say, wait: bool = True, agent: Path | None = None
    ) -> None:
        self.folder, self.team, self.concurrency, self.say, self.wait = folder, team, concurrency, say, wait
        self.agent = agent
        self.held: Held | None = None

    def __enter__(self) -> int:
        self.held = self._take_place(self.wait)
        return self.held.number

    def __exit__(self, *_: object) -> None:
        if self.held is not None:
            self.held.release()
            self.held = None

    @contextmanager
    def stepped_out(self) -> Iterator[None]:
        """Give the place up while the run waits for a person (a run waiting at a gate holds none, SPEC U5),
        and wait in line for one again once the person answered (not after Ctrl-C: the run stops there)."""
        self.__exit__()
        yield
        self.held = self._take_place(True)

    def _take_place(self, wait: bool) -> Held:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise QueueFileProblem(self.folder, exc) from None
        return _wait_for_place(self.folder, self.team, self.concurrency, self.say, wait, self.agent)


team_place = TeamPlace  # read as a verb: ``with team_place(folder, team, 1, say) as number:``


def _wait_for_place(folder: Path, team: str, concurrency: int, say: Say, wait: bool, agent: Path | None) -> Held:
    with _in_line(folder) as ticket:
        told: int | None = None
        while True:
            held, place = _try_place(folder, ticket, concurrency, agent)
            if held is not None:
                if told is not None:
                    say(f"team {team}: a place is free, the run starts")
                for group in held.stopped:
                    say(f"team {team}: stopped the agent (process group {group}) a run that died left running")
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
    try:
        mine.parent.mkdir(exist_ok=True)
        handle = mine.open("w")
    except OSError as exc:
        raise QueueFileProblem(mine, exc) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(str(os.getpid()))
        handle.flush()
        _change_line(folder, lambda line: [*line, {"ticket": ticket, "pid": os.getpid()}])
        try:
            yield ticket
        finally:
            _change_line(folder, lambda line: [entry for entry in line if entry.get("ticket") != ticket])
            mine.unlink(missing_ok=True)


def _try_place(folder: Path, ticket: str, concurrency: int, agent: Path | None) -> tuple[Held | None, int]:
    """A free place if this waiter heads the line and one is free; else its place in line (1 = next)."""
    with _line_lock(folder):
        line = _live(folder, _read_line(folder))
        if all(entry.get("ticket") != ticket for entry in line):  # the file was lost or damaged: join again
            line.append({"ticket": ticket, "pid": os.getpid()})
        _write_line(folder, line)
        place = next(n for n, entry in enumerate(line, 1) if entry.get("ticket") == ticket)
        if place != 1 or _held_places(folder) >= concurrency:
            return None, place
        for number in range(concurrency):
            held = _take(folder / f"slot-{number}.lock", number, agent)
            if held is not None:
                return held, 0
        return None, place


def _held_places(folder: Path) -> int:
    """The places held now, every ``slot-<n>.lock`` counted: a run holding slot-1 still runs after the team's
    ``concurrency`` was lowered to 1, and counts against it."""
    return sum(1 for path in folder.glob("slot-*.lock") if SLOT.fullmatch(path.name) and _holder(path) is not None)


def _take(path: Path, number: int, agent: Path | None) -> Held | None:
    try:
        handle = path.open("a+")
    except OSError as exc:
        raise QueueFileProblem(path, exc) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.seek(0)
    left = handle.read().splitlines()[1:2]  # the agent file of a holder that died holding the place
    stopped = _stop_left_agent(Path(left[0])) if left else None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n{agent or ''}\n")
    handle.flush()
    return Held(handle, number, [stopped] if stopped is not None else [])


def _stop_left_agent(agent: Path) -> int | None:
    """Stop the agent a dead holder left running (in a session of its own, the kill did not reach it), unless
    its run is being driven again by a live process (whose own agent that file now names)."""
    if agent.suffix != ".agent" or lock_holder(agent.with_suffix(".lock")) is not None:
        return None
    stopped = leftovers.stop_leftover(agent)
    if stopped is not None:
        leftovers.wait_gone(stopped)
    return stopped


def _holders(folder: Path, concurrency: int) -> str:
    """Who holds the places, by process id, for the person waiting: ``running: pid 12, pid 34``."""
    pids = [pid for path in sorted(folder.glob("slot-*.lock")) if (pid := _holder(path))]
    return f"running: {', '.join(f'pid {pid}' for pid in pids)}" if pids else "its places are being taken"


def lock_holder(path: Path) -> str | None:
    """The pid written in a lock file whose lock is held, without taking it for more than an instant."""
    if not path.exists():
        return None
    with path.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.readline().strip() or "?"
    return None


def _holder(path: Path) -> str | None:
    try:
        return lock_holder(path)
    except OSError as exc:  # a folder or a FIFO made by hand in the queue's folder
        raise QueueFileProblem(path, exc) from None


def _live(folder: Path, line: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries whose waiter still holds its lock: a waiter killed while waiting leaves the line."""
    kept = []
    for entry in line:
        ticket = entry.get("ticket")
        if not isinstance(ticket, str) or not TICKET.fullmatch(ticket):
            continue  # damaged by hand: no file of Interlock's is named by it, none is removed
        path = folder / "waiting" / f"{ticket}.lock"
        if path.exists() and _holder(path) is not None:
            kept.append(entry)
        else:
            path.unlink(missing_ok=True)
    return kept


@contextmanager
def _line_lock(folder: Path) -> Iterator[None]:
    try:
        handle = (folder / "line.lock").open("a")
    except OSError as exc:
        raise QueueFileProblem(folder / "line.lock", exc) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # held for a read and a rename: microseconds
        yield


def _change_line(folder: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    with _line_lock(folder):
        _write_line(folder, edit(_read_line(folder)))


def _read_line(folder: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(_regular_text(folder / "line.json"))
    except (OSError, ValueError, RecursionError):
        return []  # none yet, or damaged by hand (a FIFO, nested too deep): each waiter joins again on its next look
    return [entry for entry in data if isinstance(entry, dict)] if isinstance(data, list) else []


def _regular_text(path: Path) -> str:
    """The text of a regular file; a FIFO or device put there is not read (opened non-blocking: no hang)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file")
        return handle.read(1024 * 1024).decode("utf-8")


def _write_line(folder: Path, line: list[dict[str, Any]]) -> None:
    temporary = folder / f"line.json.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(line), encoding="utf-8")
    os.replace(temporary, folder / "line.json")


def waiting(folder: Path) -> list[int]:
    """The process ids waiting in line, in order (for views and tests)."""
    with _line_lock(folder):
        return [int(entry["pid"]) for entry in _live(folder, _read_line(folder)) if isinstance(entry.get("pid"), int)]
