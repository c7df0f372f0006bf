"""The local shell: applies events to runs journaled in the repository, and executes the engine's effects.

Every change goes through ``apply``: load the record, ``step``, save with compare-and-swap; on a conflict
(another process wrote first — ``interlock stop`` from another terminal, say) re-read and re-apply, which
is how a stop reaches a running process at the next mission return (SPEC J2, J4). A run being driven holds
an advisory lock, so a crashed runner (kill -9) is told apart from a live one on resume.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from app.engine.effects import (
    AskAdvisor,
    AskDecision,
    DispatchMission,
    Effect,
    EmitEvent,
    Escalate,
    FileRequest,
    Finish,
    OpenGate,
    PostMessage,
    ReadyPullRequest,
)
from app.engine.errors import InterlockError, VersionConflict
from app.engine.events import Event, GateAmended, GateApproved, Resume, Start, StopRequested
from app.engine.graph import Graph
from app.engine.record import FINAL, Run, Status
from app.engine.step import step
from app.engine.validate import parse_graph
from app.local import missions
from app.local.config import GateMode, LocalConfig
from app.local.gitops import create_run_branch, open_repo, remove_worktree, worktree
from app.store.gitstore import GitStore
from app.store.journal import decision_path, encode_json

MAX_RETRIES = 20
Ask = Callable[[str], str]


class RunBusy(InterlockError):
    def __init__(self, run_id: str, pid: str) -> None:
        super().__init__(f"run {run_id} is being executed by process {pid}; use `interlock stop {run_id}` first")


class Progress:
    """Progress lines with the run's elapsed time; on a terminal, a live line while a mission runs."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.started = time.monotonic()

    def line(self, text: str) -> None:
        if not self.quiet:
            print(f"{time.monotonic() - self.started:7.1f}s  {text}", file=self.stream, flush=True)

    @contextmanager
    def running(self, text: str) -> Iterator[None]:
        """A line that counts the seconds while ``text`` goes on (terminals only; plain lines elsewhere)."""
        self.line(f"{text} started")
        if self.quiet or not self.stream.isatty():
            yield
            return
        from rich.console import Console

        began = time.monotonic()
        with Console(file=self.stream).status(text) as status:
            stop = threading.Event()

            def tick() -> None:
                while not stop.wait(0.5):
                    status.update(f"{text} — {time.monotonic() - began:.0f}s")

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
            try:
                yield
            finally:
                stop.set()
                ticker.join()


def graph_path(run_id: str) -> str:
    return f"runs/{run_id}/graph.json"


def new_run_id() -> str:
    return f"r{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


class LocalShell:
    def __init__(
        self,
        repo: Path,
        config: LocalConfig,
        gates: GateMode = GateMode.STOP,
        progress: Progress | None = None,
        ask: Ask | None = None,
    ) -> None:
        self.repo = open_repo(repo)
        self.store = GitStore(repo)
        self.config = config
        self.gates = gates
        self.progress = progress or Progress(quiet=True)
        self.ask = ask

    def start(self, graph: Graph, title: str, body: str, run_id: str | None = None) -> Run:
        run_id = run_id or new_run_id()
        branch = f"interlock/{run_id}"
        create_run_branch(self.repo, branch, self.config.base, title)
        event = Start(
            key=f"{run_id}/start",
            at=missions.now(),
            run_id=run_id,
            title=title,
            body=body,
            origin="local",
            branch=branch,
            base=self.config.base,
            policy=self.config.policy,
            tiers=self.config.context,
            autopilot=self.gates is GateMode.APPROVE,
            advisor=bool(self.config.advisor),
        )
        run, effects = step(None, event, graph)
        files = {graph_path(run_id): encode_json(graph.to_json()), **self._files(run, effects)}
        self.store.save(run, None, files, message=f"interlock: start run {run_id} on {graph.name}")
        self.progress.line(f"run {run_id} started on graph {graph.name!r} (branch {branch} from {self.config.base})")
        return self.drive(run, graph, effects)

    def graph_of(self, run: Run) -> Graph:
        data = self.store.read(graph_path(run.id))
        if data is None:
            raise InterlockError(f"run {run.id} has no stored graph ({graph_path(run.id)})")
        return parse_graph(json.loads(data), source=graph_path(run.id))

    def send(self, run_id: str, make: Callable[[Run], Event], drive: bool = True) -> Run:
        """Apply a person's event (approve, resume, stop...) and, unless told not to, drive the run on."""
        run = self.store.load(run_id)
        graph = self.graph_of(run)
        if isinstance(make(run), Resume) and run.status is Status.RUNNING:
            self._check_not_busy(run_id)
        run, effects = self.apply(run_id, graph, make)
        return self.drive(run, graph, effects) if drive else run

    def apply(
        self, run_id: str, graph: Graph, make: Callable[[Run], Event], files: dict[str, bytes] | None = None
    ) -> tuple[Run, list[Effect]]:
        for _ in range(MAX_RETRIES):
            current = self.store.load(run_id)
            event = make(current)
            run, effects = step(current, event, graph)
            if run is current:
                return run, []
            try:
                self.store.save(run, current.version, {**(files or {}), **self._files(run, effects)})
                return run, effects
            except VersionConflict:
                continue
        raise InterlockError(f"run {run_id}: gave up after {MAX_RETRIES} conflicting writes")

    def _files(self, run: Run, effects: list[Effect]) -> dict[str, bytes]:
        return {decision_path(run.id): e.decision.encode("utf-8") for e in effects if isinstance(e, Escalate)}

    def drive(self, run: Run, graph: Graph, effects: list[Effect]) -> Run:
        """Execute effects until the run needs nothing more from this process."""
        queue = deque(effects)
        with self.lock(run.id):
            while queue:
                effect = queue.popleft()
                done = self.execute(run, graph, effect)
                if done is None:
                    continue
                run, more = self.apply(run.id, graph, lambda _r, e=done.event: e, done.files)
                self._report(run, getattr(done.event, "seq", 0))
                queue.extend(more)
            run = self.store.load(run.id)
            if run.status in FINAL:
                remove_worktree(self.repo, run.id)
        return run

    def execute(self, run: Run, graph: Graph, effect: Effect) -> missions.Done | None:
        if isinstance(effect, DispatchMission):
            return self._mission(run, effect)
        if isinstance(effect, AskDecision):
            self.progress.line(f"{effect.stage} · decision #{effect.seq} among {', '.join(effect.labels)}")
            return missions.decide(run, effect, self.config, worktree(self.repo, run.branch, run.id))
        if isinstance(effect, AskAdvisor):
            return missions.advise(run, effect, self.config, worktree(self.repo, run.branch, run.id))
        if isinstance(effect, OpenGate):
            return self._gate(run, effect)
        self._show(effect)
        return None

    def _mission(self, run: Run, effect: DispatchMission) -> missions.Done:
        if self.store.load(run.id).stop_requested:
            return missions.skipped(run, effect)
        with self.progress.running(f"{effect.stage} · mission #{effect.seq} ({effect.kind.value})"):
            return missions.run_mission(self.repo, run, effect, self.config)

    def _gate(self, run: Run, effect: OpenGate) -> missions.Done | None:
        self.progress.line(f"{effect.stage} · gate open: {effect.verdict} waits for a person")
        if self.gates is not GateMode.ASK or self.ask is None:
            return None
        answer = self.ask(f"Gate at {effect.stage} ({effect.verdict}). [a]pprove, [m]end, or [s]top? ").strip()
        key = f"{run.id}/gate/{effect.mission}/{run.version}"
        if answer.lower() in ("a", "approve", "y", "yes"):
            note = self.ask("Note for the next steps (optional): ").strip()
            return missions.Done(GateApproved(key=key, at=missions.now(), note=note, by=_user()), {})
        if answer.lower() in ("m", "amend"):
            note = self.ask("What should change? ").strip()
            return missions.Done(GateAmended(key=key, at=missions.now(), note=note, by=_user()), {})
        return None

    def _show(self, effect: Effect) -> None:
        if isinstance(effect, PostMessage):
            self.progress.line(effect.text.splitlines()[0] if effect.text else effect.kind)
        elif isinstance(effect, Escalate):
            self.progress.line(f"stopped: {effect.reason.code.value} at {effect.reason.stage}: {effect.reason.message}")
        elif isinstance(effect, FileRequest):
            self.progress.line(f"request for {effect.target}: {effect.title} (recorded; file it upstream)")
        elif isinstance(effect, ReadyPullRequest):
            self.progress.line("delivery ready: review the run branch and merge it yourself")
        elif isinstance(effect, EmitEvent):
            self.progress.line(f"event {effect.name} from {effect.stage}")
        elif isinstance(effect, Finish):
            self.progress.line(f"run finished: {effect.status.value}")

    def _report(self, run: Run, seq: int) -> None:
        last = run.mission(seq)
        if last is not None and last.status is not None:
            verdict = f" → {last.verdict}" if last.verdict else ""
            self.progress.line(
                f"{last.stage} · mission #{last.seq} {last.status.value}{verdict}"
                f"{f' ({last.duration_s:.1f}s)' if last.duration_s else ''}"
            )

    def _lock_path(self, run_id: str) -> Path:
        path = Path(self.repo.git_dir) / "interlock" / "locks" / f"{run_id}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    @contextmanager
    def lock(self, run_id: str) -> Iterator[None]:
        with self._lock_path(run_id).open("a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                raise RunBusy(run_id, handle.read().strip() or "?") from None
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            yield

    def _check_not_busy(self, run_id: str) -> None:
        with self.lock(run_id):
            pass


def stop_event(run: Run) -> Event:
    return StopRequested(key=f"{run.id}/stop/{run.version}", at=missions.now(), by=_user())


def _user() -> str:
    return os.environ.get("USER") or os.environ.get("USERNAME") or "local user"
