"""The local shell: applies events to runs journaled in the repository, and executes the engine's effects.

Every change goes through the run driver (``app/runner/driver.py``): load the record, ``step``, save with
compare-and-swap; on a conflict (another process wrote first — ``interlock stop`` from another terminal, say)
re-read and re-apply, which is how a stop reaches a running process at the next mission return (SPEC J2, J4).
A run being driven holds an advisory lock (``app/local/runlock.py``), so a crashed runner (kill -9) is told apart
from a live one on resume.
"""

from __future__ import annotations

import os
import secrets
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeAlias, assert_never

from app.engine import effects as fx
from app.engine.errors import InterlockError, RunFinished
from app.engine.events import (
    Abandon,
    Deliver,
    Event,
    GateAmended,
    GateApproved,
    InputAnswered,
    Merged,
    SessionStarted,
    Start,
    StopRequested,
)
from app.engine.graph.model import Graph
from app.engine.record import FINAL, Launch, Run, Status
from app.local import leftovers, missions, satellites
from app.local.basestate import with_delivery_state
from app.local.config import ConfigError, GateMode, LocalConfig, missing_agent_problem
from app.local.gatecommit import reviewed_commit
from app.local.gitops import (
    create_run_branch,
    drop_unused_start,
    merged_into_base,
    open_repo,
    remove_worktree,
    worktree,
)
from app.local.launch import make_launch
from app.local.progress import Progress
from app.local.reports import gate_answer, render_gate_answer, screen_lines
from app.local.runlock import LOCAL_ORIGINS, RunBusy, RunLocks
from app.redact import Redactor
from app.runner.driver import RunDriver, same_event
from app.store.archived import ArchivedGitStore
from app.store.journal import record_path

Ask = Callable[[str], str]
GATE_ANSWERS = ("a", "approve", "y", "yes", "m", "amend", "s", "stop", "")  # empty: stop here, as for questions
# Messages written for the issue on GitHub (a pull request to approve, to merge) that the local shell says in
# its own terms, from the gate and the ready delivery: printed, they would name a pull request there is not.
SAID_LOCALLY = (fx.MessageKind.GATE, fx.MessageKind.END)
# The effects this shell only reports: a local run has no issue, pull request or webhook to carry them out on.
Shown: TypeAlias = (
    fx.PostMessage | fx.Escalate | fx.FileRequest | fx.OpenPullRequest | fx.ReadyPullRequest | fx.EmitEvent | fx.Finish
)


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
        self.store = ArchivedGitStore(repo)  # archived runs read as before (app/store/archive.py)
        self.driver = RunDriver(self.store)  # no mission orders: missions run here, with their prompt
        self.config = config
        self.gates = gates
        self.progress = progress or Progress(quiet=True)
        self.ask = ask
        self.locks = RunLocks(self.repo, self.store, lambda line: self.progress.line(line))
        # what asking a person at the terminal steps out of: the team's place, set by teamrun.team_turn
        self.away_from_team: Callable[[], AbstractContextManager[None]] = nullcontext

    def start(
        self, graph: Graph, title: str, body: str, run_id: str | None = None, launch: Launch | None = None
    ) -> Run:
        """Start a run and drive it. ``launch`` records how it was started (by default, this shell's own
        configuration and gates), so that the commands continuing it use the same agents (SPEC J1)."""
        problem = missing_agent_problem(self.config, graph)
        if problem:
            raise ConfigError(f"the run was not started: {problem}")
        at = missions.now()
        title, body = Redactor().text(title), Redactor().text(body)  # the request is a person's text: masked
        launch = launch or make_launch(self.config, self.gates, (None, None), "run", at)
        run_id = run_id or new_run_id()
        branch = f"interlock/{run_id}"
        if self.store.read(record_path(run_id)) is None:  # a start killed before its record: start again
            drop_unused_start(self.repo, branch)
        found = satellites.resolve(self.config.satellites, self.repo)  # SPEC U7
        satellites.make_branches(found, branch, self.repo)
        create_run_branch(self.repo, branch, self.config.base, title)
        event = Start(
            key=f"{run_id}/start",
            at=at,
            launch=launch,
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
            upstream=tuple(self.config.upstream),
            satellites=tuple(found),
        )
        started = self.driver.start(event, graph)
        self.progress.line(f"run {run_id} started on graph {graph.name!r} (branch {branch} from {self.config.base})")
        return self.drive(started.run, graph, started.effects)

    def graph_of(self, run: Run) -> Graph:
        return self.driver.graph_of(run)

    def send(self, run_id: str, make: Callable[[Run], Event], drive: bool = True) -> Run:
        """Apply a person's event (approve, resume, stop...) and, unless told not to, drive the run on."""
        run = self.notice_merge(self.store.load(run_id))
        graph = self.graph_of(run)
        event = reviewed_commit(Redactor().event(make(run)), self.repo, run)  # masked; a gate's: of the head (H5)
        if not drive:  # a stop: it must reach a run another process drives (SPEC J4)
            return self.driver.apply(run_id, same_event(event), graph).run
        if not isinstance(event, Abandon | Deliver):  # these dispatch nothing: they go on without a satellite
            satellites.check_present(run)
        event = with_delivery_state(self.repo, run, event)  # SPEC V9: the base as it is now, should it end the run
        with self.lock(run_id):  # held from before the event, across every retry, until the run needs nothing more
            applied = self.driver.apply(run_id, same_event(event), graph)
            return self._drive_held(applied.run, graph, applied.effects)

    def drive(self, run: Run, graph: Graph, effects: list[fx.Effect]) -> Run:
        """Execute effects until the run needs nothing more from this process."""
        with self.lock(run.id):
            return self._drive_held(run, graph, effects)

    def _drive_held(self, run: Run, graph: Graph, effects: list[fx.Effect]) -> Run:
        """``drive`` by a process already holding the run's lock (a second ``flock`` would refuse it)."""
        queue = deque(effects)
        while queue:
            effect = queue.popleft()
            done = self.execute(run, graph, effect)
            if done is None:
                continue
            event = reviewed_commit(Redactor().event(done.event), self.repo, run)  # masked; of the head (H5)
            event = with_delivery_state(self.repo, run, event)  # SPEC V9: a gate answer or decision may end it
            applied = self.driver.apply(run.id, same_event(event), graph, done.files)
            run = applied.run
            self._report(run, getattr(done.event, "seq", 0))
            queue.extend(applied.effects)
        run = self.store.load(run.id)
        if run.status in FINAL:
            remove_worktree(self.repo, run.id)
        return run

    def execute(self, run: Run, graph: Graph, effect: fx.Effect) -> missions.Done | None:
        """One effect in this process; the finished mission, decision or answer to apply next, if any."""
        match effect:
            case fx.DispatchMission():
                return self._mission(run, graph, effect)
            case fx.AskDecision():
                self.progress.line(f"{effect.stage} · decision #{effect.seq} among {', '.join(effect.labels)}")
                return missions.decide(run, effect, self.config, worktree(self.repo, run.branch, run.id))
            case fx.AskAdvisor():
                return missions.advise(run, effect, self.config, worktree(self.repo, run.branch, run.id))
            case fx.OpenGate():
                return self._gate(run, effect)
            case fx.PostMessage(kind=fx.MessageKind.QUESTION):
                return self._question(run, effect)
            case (
                fx.PostMessage()
                | fx.Escalate()
                | fx.FileRequest()
                | fx.OpenPullRequest()
                | fx.ReadyPullRequest()
                | fx.EmitEvent()
                | fx.Finish()
            ):
                self._show(run, effect)
            case _:
                assert_never(effect)
        return None

    def _mission(self, run: Run, graph: Graph, effect: fx.DispatchMission) -> missions.Done:
        if self.store.load(run.id).stop_requested:
            return missions.skipped(run, effect)
        keep = self._session_keeper(run.id, graph, effect.seq)
        agent = self.agent_path(run.id)
        with self.progress.running(f"{effect.stage} · mission #{effect.seq} ({effect.kind.value})"):
            try:
                return missions.run_mission(
                    self.repo, run, effect, self.config, keep, lambda pid: leftovers.remember(agent, pid)
                )
            finally:
                leftovers.forget(agent)

    def _session_keeper(self, run_id: str, graph: Graph, seq: int) -> Callable[[str], None]:
        """Save the agent's session id in the in-flight record the moment the agent reveals it, so that a
        resume after this process dies continues that session (SPEC J3)."""

        def keep(session_id: str) -> None:
            event = SessionStarted(
                key=f"{run_id}/mission/{seq}/session/{session_id}", at=missions.now(), seq=seq, session_id=session_id
            )
            try:
                self.driver.apply(run_id, same_event(event), graph)
            except InterlockError as exc:
                self.progress.line(f"mission #{seq}: the agent's session {session_id} was not recorded: {exc}")

        return keep

    def _gate(self, run: Run, effect: fx.OpenGate) -> missions.Done | None:
        self.progress.line(f"{effect.stage} · gate open: {effect.verdict} waits for a person")
        if self.gates is not GateMode.ASK or self.ask is None:
            return None
        current = self.store.load(run.id)
        view = gate_answer(current, self.store, screen_lines())
        shown = f"{render_gate_answer(view)}\n\n" if view is not None else ""
        with self.away_from_team():  # a run waiting for a person holds no place of its team (SPEC U5)
            answer = self.ask(f"{shown}Gate at {effect.stage} ({effect.verdict}). [a]pprove, [m]end, or [s]top? ")
            while answer.strip().lower() not in GATE_ANSWERS:  # a typo must not leave the gate unnoticed
                answer = self.ask("Type a (approve), m (amend) or s (stop here; approve or amend later): ")
            choice = answer.strip().lower()
            approved = choice in ("a", "approve", "y", "yes")
            if approved or choice in ("m", "amend"):
                note = self.ask("Note for the next steps (optional): " if approved else "What should change? ")
        key = f"{run.id}/gate/{effect.mission}/{current.version}"
        if approved:
            return missions.Done(GateApproved(key=key, at=missions.now(), note=note.strip(), by=_user()), {})
        if choice in ("m", "amend"):
            return missions.Done(GateAmended(key=key, at=missions.now(), note=note.strip(), by=_user()), {})
        return None

    def _question(self, run: Run, effect: fx.PostMessage) -> missions.Done | None:
        """A NEEDS_INPUT answer (SPEC V6): its questions in full; in ask mode the person answers right here."""
        if self.gates is not GateMode.ASK or self.ask is None:
            self._show(run, effect)
            return None
        current = self.store.load(run.id)
        self.progress.line(f"{current.stage} · question for a person")
        with self.away_from_team():  # a run waiting for a person holds no place of its team (SPEC U5)
            answer = self.ask(
                f"Stage {current.stage} asks:\n{current.questions}\n\n"
                f"Your answer (empty: answer later with `interlock answer {run.id} --text T`): "
            ).strip()
        if not answer:
            return None
        key = f"{run.id}/answer/{current.version}"
        return missions.Done(InputAnswered(key=key, at=missions.now(), text=answer, by=_user()), {})

    def _show(self, run: Run, effect: Shown) -> None:
        """What the GitHub shell carries out on GitHub, said on the terminal instead."""
        match effect:
            case fx.PostMessage():
                if effect.kind not in SAID_LOCALLY:
                    self.progress.line(effect.text or effect.kind)
            case fx.Escalate():
                reason = effect.reason
                self.progress.line(f"stopped: {reason.code.value} at {reason.stage}: {reason.message}")
            case fx.FileRequest():
                self.progress.line(f"request for {effect.target}: {effect.title} (recorded; file it upstream)")
            case fx.OpenPullRequest():  # a local run opens none: where the work to review is, said instead
                self.progress.line(f"{run.stage} · work to review on {run.branch}: git diff {run.base}...{run.branch}")
            case fx.ReadyPullRequest():
                self.progress.line("delivery ready: review the run branch and merge it yourself")
            case fx.EmitEvent():
                self.progress.line(f"event {effect.name} from {effect.stage}")
            case fx.Finish():
                self.progress.line(f"run finished: {effect.status.value}")
            case _:
                assert_never(effect)

    def _report(self, run: Run, seq: int) -> None:
        last = run.mission(seq)
        if last is not None and last.status is not None:
            verdict = f" → {last.verdict}" if last.verdict else ""
            self.progress.line(
                f"{last.stage} · mission #{last.seq} {last.status.value}{verdict}"
                f"{f' ({last.duration_s:.1f}s)' if last.duration_s else ''}"
            )

    def lock(self, run_id: str) -> AbstractContextManager[None]:
        """Hold the run's lock (``app/local/runlock.py``): ``RunBusy`` while another process drives it."""
        return self.locks.hold(run_id)

    def agent_path(self, run_id: str) -> Path:
        """Where the runner writes down the process group of the agent it runs (app/local/leftovers.py)."""
        return self.locks.agent_path(run_id)

    def runner(self, run: Run) -> str:
        """Who drives the run: ``live (pid N)``, ``stopped`` or ``none`` (``RunLocks.runner``)."""
        return self.locks.runner(run)

    def notice_merge(self, run: Run) -> Run:
        """SPEC GH6 on a local run: once its branch is merged into the base, the run is done — the engine's
        Merged event, as the App applies on GitHub, keyed by the base's head so it is recorded once."""
        if run.status is not Status.AWAITING_MERGE or run.request.origin not in LOCAL_ORIGINS:
            return run
        base_head = merged_into_base(self.repo, run.branch, run.base)
        if base_head is None or not satellites.merged(run):  # SPEC U7: done when every repository's is merged
            return run
        event = Merged(key=f"{run.id}/merged/{base_head}", at=missions.now())
        try:
            with self.lock(run.id):
                run = self.driver.apply(run.id, same_event(event)).run
                remove_worktree(self.repo, run.id)
                satellites.remove_worktrees(run)
        except (RunBusy, RunFinished):
            return self.store.load(run.id)
        self.progress.line(f"run {run.id}: {run.branch} was merged into {run.base} ({base_head[:12]}): done")
        return run


def stop_event(run: Run) -> Event:
    return StopRequested(key=f"{run.id}/stop/{run.version}", at=missions.now(), by=_user())


def _user() -> str:
    return os.environ.get("USER") or os.environ.get("USERNAME") or "local user"
