"""``interlock step``: one mission in an Actions job (SPEC GH2, GH3).

Read the run record and the mission's order from the state branch; check out the run branch; run the
agent with the read-only token only; then, in this code and after the agent exited, commit its work, push
it to the run branch and store the mission record on the state branch. The service reads that record when
the job's ``workflow_run`` completes; a job that stores none is a mission that did not end done (E1).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.agents.base import AgentCall, AgentOutcome
from app.agents.spec import agent_from_spec
from app.engine.errors import InterlockError
from app.engine.record import MissionKind, MissionStatus, Run
from app.local.gitops import commit_work
from app.runner.orders import Order, read_order
from app.runner.records import mission_record, run_check
from app.runner.redact import Redactor
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, encode_json, mission_path, record_path

WRITE_TOKENS = ("INTERLOCK_PUSH_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")
RUNNER_SECRETS = ("ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL")


class JobError(InterlockError):
    pass


@dataclass(frozen=True)
class JobSettings:
    workdir: Path
    run_id: str
    seq: int
    agent: str = "claude"
    state_branch: str = STATE_BRANCH
    timeout_s: float = 3600.0


@dataclass(frozen=True)
class JobResult:
    stored: str | None  # the mission record's path, None when the run no longer waits for this mission
    status: MissionStatus | None
    commits: int
    message: str
    answer: str = ""  # redacted, for the job's log


def run_job(settings: JobSettings, env: dict[str, str] | None = None) -> JobResult:
    """One mission, start to stored record. Raises ``InterlockError`` (the job fails, and the service counts
    the mission as not done) only when the record cannot be stored."""
    env = dict(os.environ if env is None else env)
    redactor = Redactor(env)
    remote = Remote(settings.workdir, token=env.get("INTERLOCK_PUSH_TOKEN") or env.get("GITHUB_TOKEN"))
    state, run = _read_run(remote, settings)
    if run.waiting is None or run.waiting.seq != settings.seq:
        return JobResult(None, None, 0, f"run {run.id} no longer waits for mission {settings.seq}: nothing to do")
    order = _read_order(remote, state, run, settings.seq)
    if run.stop_requested:
        outcome = AgentOutcome(status=MissionStatus.SKIPPED, answer="A stop was requested before this mission began.")
        commits = 0
    else:
        outcome, commits = _work(remote, run, order, settings, env)
    record = mission_record(run.id, order.seq, order.stage, order.kind, outcome, commits, redactor=redactor)
    path = mission_path(run.id, order.seq, order.stage)
    message = f"interlock: record of run {run.id} mission {order.seq} ({order.stage}) {outcome.status.value}"
    remote.add_files(settings.state_branch, {path: encode_json(record)}, message)
    summary = redactor.text(f"{message}; {commits} commit(s) pushed")
    return JobResult(path, outcome.status, commits, summary, str(record["answer"]))


def _read_run(remote: Remote, settings: JobSettings) -> tuple[str, Run]:
    state = remote.fetch(settings.state_branch)
    if state is None:
        raise JobError(f"the repository has no `{settings.state_branch}` branch: is Interlock installed?")
    raw = remote.show(state, record_path(settings.run_id))
    if raw is None:
        raise JobError(f"no run `{settings.run_id}` on `{settings.state_branch}`")
    return state, Run.from_journal(raw)


def _read_order(remote: Remote, state: str, run: Run, seq: int) -> Order:
    names = [n for n in remote.names(state, f"runs/{run.id}/orders") if n.startswith(f"{seq:04d}-")]
    data = remote.show(state, f"runs/{run.id}/orders/{names[0]}") if names else None
    if data is None:
        raise JobError(f"run `{run.id}` has no order for mission {seq}")
    try:
        return read_order(json.loads(data))
    except ValueError as exc:
        raise JobError(f"the order of mission {seq} is unreadable: {exc}") from None


def _work(
    remote: Remote, run: Run, order: Order, settings: JobSettings, env: dict[str, str]
) -> tuple[AgentOutcome, int]:
    """Run the agent (or the check) on the run branch, then commit and push what it changed."""
    if remote.fetch(run.branch) is None:
        raise JobError(f"the run branch `{run.branch}` does not exist")
    remote.git("checkout", "--quiet", "--force", "-B", run.branch, f"refs/interlock/{run.branch}")
    before = remote.head()
    call = AgentCall(
        prompt=order.prompt,
        workdir=settings.workdir,
        run_id=run.id,
        stage=order.stage,
        capability=order.capability,
        visit=order.visit,
        mission=order.seq,
        kind=order.kind,
        session_id=order.session_id,
        timeout_s=settings.timeout_s,
    )
    with agent_environment(env.get("INTERLOCK_READ_TOKEN")):
        outcome = run_check(call, order.check) if order.check else agent_from_spec(settings.agent).run(call)
    if order.kind in (MissionKind.DECIDE, MissionKind.ADVISOR):
        return outcome, 0
    return _deliver(remote, run, order, outcome, before)


def _deliver(remote: Remote, run: Run, order: Order, outcome: AgentOutcome, before: str) -> tuple[AgentOutcome, int]:
    """Commit the agent's changes and push them; history the agent rewrote, or a branch that moved meanwhile,
    is never forced: the mission then fails, and a person decides."""
    commit_work(remote.workdir, f"interlock({run.id}): {order.stage} mission #{order.seq} ({order.kind.value})")
    head = remote.head()
    if head == before:
        return outcome, 0
    if not remote.is_ancestor(before, head):
        return _failed(outcome, "the agent rewrote the run branch's history; nothing was pushed"), 0
    commits = int(remote.git("rev-list", "--count", f"{before}..{head}").decode())
    if not remote.push(head, run.branch):
        return _failed(outcome, "the run branch moved while the agent worked; nothing was pushed"), 0
    return outcome, commits


def _failed(outcome: AgentOutcome, why: str) -> AgentOutcome:
    return outcome.with_(status=MissionStatus.FAILED, answer=f"{outcome.answer}\n\n[Interlock: {why}]")


@contextlib.contextmanager
def agent_environment(read_token: str | None) -> Iterator[None]:
    """The environment the agent inherits: no write token, no runner credentials; the read-only token, if
    one was given, as ``GITHUB_TOKEN``/``GH_TOKEN``. Restored when the agent exits."""
    saved = {name: os.environ[name] for name in (*WRITE_TOKENS, *RUNNER_SECRETS) if name in os.environ}
    for name in saved:
        del os.environ[name]
    if read_token:
        os.environ["GITHUB_TOKEN"] = os.environ["GH_TOKEN"] = read_token
    try:
        yield
    finally:
        for name in ("GITHUB_TOKEN", "GH_TOKEN"):
            os.environ.pop(name, None)
        os.environ.update(saved)
