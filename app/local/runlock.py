"""One process drives a run at a time: an advisory lock on a file beside the repository's git data.

Why: two runners of one run would run two agents for one mission (issue 28). The lock file names the pid of the
process that holds it, so ``status`` tells a live runner from a crashed one (kill -9: the record says running and
no process holds the lock) and a refusal says who drives the run and what it is doing. Taking the lock is also
when a dead runner's leftovers are cleared: the agent's process group it left running, and its git locks.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from app.engine.errors import InterlockError
from app.engine.record import Run, Status
from app.local import leftovers
from app.local.gitops import Repo, clear_stale_locks
from app.local.queue import lock_holder
from app.store.gitstore import GitStore
from app.store.journal import record_path

LOCK_TRIES = 5  # a `status` probing the lock holds it for microseconds: a runner starting then tries again
LOCAL_ORIGINS = ("", "local")  # runs started here; the others are driven elsewhere (GitHub Actions)


class RunBusy(InterlockError):
    """Another process drives the run (issue 28: never two runners, so never two agents, for one mission)."""

    def __init__(self, run_id: str, pid: str, doing: str = "") -> None:
        said = f"run {run_id} is being executed by process {pid}{': ' + doing if doing else ''}"
        super().__init__(f"{said}; use `interlock stop {run_id}` first")


class RunLocks:
    """The run locks of one repository; ``say`` prints a line for the person at the terminal."""

    def __init__(self, repo: Repo, store: GitStore, say: Callable[[str], None]) -> None:
        self.repo = repo
        self.store = store
        self.say = say

    def path(self, run_id: str) -> Path:
        """The run's lock file, in the repository's git folder: never in a worktree, never committed."""
        path = Path(self.repo.git_dir) / "interlock" / "locks" / f"{run_id}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def agent_path(self, run_id: str) -> Path:
        """Where the runner writes down the process group of the agent it runs (app/local/leftovers.py)."""
        return self.path(run_id).with_suffix(".agent")

    @contextmanager
    def hold(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock, writing this process's pid in it; ``RunBusy`` when another process holds it. What
        a runner that died left behind (its agent, its git locks) is cleared first."""
        with self.path(run_id).open("a+") as handle:
            for attempt in range(LOCK_TRIES):
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if attempt == LOCK_TRIES - 1:
                        handle.seek(0)
                        raise RunBusy(run_id, handle.read().strip() or "?", self._doing(run_id)) from None
                    time.sleep(0.02)
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            stopped = leftovers.stop_leftover(self.agent_path(run_id))
            if stopped is not None:
                self.say(f"stopped the agent (process group {stopped}) a runner that died left running")
                leftovers.wait_gone(stopped)
            self._clear_git_locks(run_id)
            yield

    def _doing(self, run_id: str) -> str:
        """What the process that holds the run's lock is doing, for the refusal: the mission it runs and since
        when its agent started (the agent file's time), or '' when the record awaits none."""
        if self.store.read(record_path(run_id)) is None:
            return ""
        waiting = self.store.load(run_id).waiting
        if waiting is None:
            return ""
        agent = self.agent_path(run_id)
        since = (
            f" since {datetime.fromtimestamp(agent.stat().st_mtime, UTC):%Y-%m-%d %H:%M:%S} UTC"
            if agent.exists()
            else ""
        )
        return f"mission #{waiting.seq} ({waiting.stage}) is running{since}"

    def _clear_git_locks(self, run_id: str) -> None:
        """Called holding the run's lock: any git lock of the run was left by a process now dead."""
        branch = self.store.load(run_id).branch if self.store.read(record_path(run_id)) else f"interlock/{run_id}"
        for lock in clear_stale_locks(self.repo, run_id, branch):
            self.say(f"removed {lock}, a git lock left by a process that died")

    def runner(self, run: Run) -> str:
        """Who drives the run: ``live (pid N)`` while a process holds its lock; ``stopped`` when the record
        says running but no process does (the runner was killed or its machine lost: only ``resume`` moves
        it on); ``none`` when nothing needs to run, or the run is driven elsewhere (GitHub Actions)."""
        if run.request.origin not in LOCAL_ORIGINS:
            return "none"
        holder = lock_holder(self.path(run.id))
        if holder is not None:
            return f"live (pid {holder})"
        return "stopped" if run.status is Status.RUNNING else "none"
