"""An agent a dead runner left behind: found and stopped before the run is driven again.

Each agent runs in a process group of its own, so that a timeout can kill it with its children
(``app/agents/command.py``). The flip side: when the runner itself is killed (kill -9, a lost terminal),
nothing kills the agent, which goes on editing the run's worktree while ``interlock resume`` starts
another agent in the same worktree. So the runner writes down each agent's process group while it
runs, beside the run's lock, and whoever takes the lock next stops a group still written there.

A process id can be reused, so the group is stopped only if its leader is still the very process that
was written down: same id *and* same start time (``/proc/<pid>/stat``, field 22). Where ``/proc`` does not
exist (macOS), nothing can be proven and nothing is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def remember(path: Path, pid: int) -> None:
    """Write down the agent's process group (its leader's id and start time) while it runs."""
    with contextlib.suppress(OSError):
        path.write_text(f"{pid} {started_at(pid) or '?'}\n", encoding="ascii")


def forget(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def stop_leftover(path: Path) -> int | None:
    """Kill the process group written in ``path`` if its leader is still that process; its id, or None."""
    try:
        pid_text, _, started = path.read_text(encoding="ascii").strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    forget(path)
    if started == "?" or started_at(pid) != started:
        return None  # gone, reused by another process, or not provable here
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
        return pid
    return None


def wait_gone(pid: int, seconds: float = 3.0) -> None:
    """Wait a moment for a killed leader to be gone, so that no file it was writing changes after this."""
    deadline = time.monotonic() + seconds
    while started_at(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.02)


def started_at(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, or None if it is gone (or no ``/proc``).
    A zombie counts as gone: it runs nothing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and parentheses
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return fields[19]
