"""``interlock step``: one mission in Actions jobs (SPEC GH2, GH3).

Two phases, each in its own job of the mission workflow:
- **work** (read-only token): read the run record and the mission's order from the state branch, check out
  the run branch, run the agent (or the check) in an environment built from an allow-list
  (``app/agents/environment.py``), commit the agent's changes locally (a check commits nothing), and hand
  off the outcome and the commits (``app/runner/handoff.py``);
- **deliver** (write token, no checkout, nothing of the agent's runs): check the commits fast-forward the
  run branch and touch no workflow file, push them, and store the mission record on the state branch.
The service reads that record when the job's ``workflow_run`` completes; a job that stores none is a
mission that did not end done (E1). Without a phase, both run in one process, for a runner you trust.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from app.agents.base import AgentCall, AgentOutcome
from app.agents.environment import agent_keys, allowed_environment, parse_names
from app.agents.spec import agent_from_spec
from app.engine.errors import InterlockError
from app.engine.record import MissionKind, MissionStatus, Run
from app.gitaccess import ON_GITHUB, git_output, isolated_env
from app.redact import Redactor
from app.runner.gitstate import delivered_state
from app.runner.handoff import BUNDLE_FILE, BUNDLE_REF, Handoff, read_handoff
from app.runner.isolate import SATELLITE_TOKEN, take_tokens
from app.runner.orders import Order, read_order
from app.runner.partial import BLOBLESS, ready_for_agent
from app.runner.records import Assignment, masked_outcome, mission_record, run_advisor, run_check
from app.runner.remote import Remote, push_token
from app.runner.satellites import check_out, commit_satellites, main_url, prompt_note, push_satellites
from app.store.journal import STATE_BRANCH, encode_json, mission_path, numbered, orders_folder, record_path
from app.store.layout import V2, bucket

PROTECTED = (".github/workflows/",)


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
    remote: str = "origin"
    partial: str = ""  # a filter for every fetch (app/runner/partial.py): the deliver scratch's ``blob:none``


@dataclass(frozen=True)
class JobResult:
    stored: str | None  # the mission record's path; None when nothing was stored
    status: MissionStatus | None
    commits: int
    message: str
    answer: str = ""  # redacted, for the job's log


class Phase(StrEnum):
    ALL = "all"
    WORK = "work"
    DELIVER = "deliver"


def run_step(phase: Phase, settings: JobSettings, handoff: Path | None, work_result: str = "") -> JobResult:
    """``interlock step`` in one phase or both. The deliver phase works in a scratch repository of its own,
    never in a checkout the agent touched, so it needs the remote as a URL (or a path)."""
    if phase is Phase.ALL:
        return run_job(settings)
    if handoff is None:
        raise JobError(f"--handoff DIR is required with --phase {phase.value}")
    if phase is Phase.WORK:
        done = work_phase(settings, handoff)
        return done or JobResult(None, None, 0, f"mission {settings.seq} worked; its outcome is in {handoff}")
    if settings.remote == "origin":
        raise JobError("--phase deliver needs --remote URL (in Actions: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY)")
    with tempfile.TemporaryDirectory(prefix="interlock-deliver-") as scratch:
        git_output(["init", "--quiet", "--bare", scratch], None, isolated_env(ON_GITHUB))
        return deliver_phase(replace(settings, workdir=Path(scratch), partial=BLOBLESS), handoff, work_result)


def job_log(result: JobResult, seq: int) -> str:
    """What the job prints: the answer folded, with workflow commands off inside it (an answer is the agent's
    text: a line such as ``::add-mask::`` or ``::set-output::`` in it must not act), then the summary.
    https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions"""
    if not result.answer:
        return result.message
    marker = secrets.token_hex(16)
    return (
        f"::group::Answer of mission {seq}\n::stop-commands::{marker}\n{result.answer.rstrip()}\n::{marker}::\n"
        f"::endgroup::\n{result.message}"
    )


def run_job(settings: JobSettings, env: dict[str, str] | None = None) -> JobResult:
    """Both phases in one process. Raises ``InterlockError`` only when the record cannot be stored."""
    with tempfile.TemporaryDirectory(prefix="interlock-handoff-") as folder:
        worked = work_phase(settings, Path(folder), env)
        if worked is not None:
            return worked
        return deliver_phase(settings, Path(folder), "success", env)


def work_phase(settings: JobSettings, handoff: Path, env: dict[str, str] | None = None) -> JobResult | None:
    """Run the mission and write the hand-off; a ``JobResult`` instead when there is nothing to do."""
    env = dict(os.environ if env is None else env)
    listed = parse_names(env.get("INTERLOCK_AGENT_ENV", ""))  # a bad name stops the job before anything runs
    handed, handed_satellites = take_tokens(env)
    token = handed or env.get("GITHUB_TOKEN") or env.get("INTERLOCK_PUSH_TOKEN")  # git's: never the agent's
    satellite_token = handed_satellites or env.get(SATELLITE_TOKEN) or token  # SPEC U7: private or elsewhere
    remote = Remote(settings.workdir, token=token, remote=settings.remote)
    state, run = read_run(remote, settings)
    if not awaits(run, settings.seq):
        return JobResult(None, None, 0, f"run {run.id} no longer waits for mission {settings.seq}: nothing to do")
    order = read_order_at(remote, state, run, settings.seq)
    if run.stop_requested:
        skipped = AgentOutcome(status=MissionStatus.SKIPPED, answer="A stop was requested before this mission began.")
        Handoff(order.seq, skipped, None, None).write(handoff)
        return None
    if remote.fetch(run.branch) is None:
        raise JobError(f"the run branch `{run.branch}` does not exist")
    remote.git("checkout", "--quiet", "--force", "-B", run.branch, f"refs/interlock/{run.branch}")
    base = remote.head()
    ready_for_agent(remote, main_url(remote))  # a blobless checkout the agent's git could not complete
    bases = check_out(run, settings.workdir, main_url(remote), satellite_token)  # SPEC U7: beside the main one
    note = prompt_note(run, settings.workdir)
    shorter = order.shorter_prompt and order.shorter_prompt + note
    order = replace(order, prompt=order.prompt + note, shorter_prompt=shorter)
    handoff.mkdir(parents=True, exist_ok=True)
    handed_values = [value for value in (token, satellite_token) if value]
    outcome = masked_outcome(_work(run, order, settings, env, listed), Redactor(env, handed_values))  # none kept
    remote = Remote(settings.workdir, remote=settings.remote)  # no token from here on: a process the agent left
    head = None  # behind could read it in the environment of the git processes below
    if order.kind not in (MissionKind.DECIDE, MissionKind.ADVISOR) and not order.check:
        message = f"interlock({run.id}): {order.stage} mission #{order.seq} ({order.kind.value})"
        remote.commit_all(message)
        commit_satellites(run, settings.workdir, bases, message, handoff)
        head = remote.head()
        if head != base:
            remote.git("update-ref", BUNDLE_REF, head)
            remote.git("bundle", "create", "--quiet", str(handoff / BUNDLE_FILE), BUNDLE_REF, f"^{base}")
    Handoff(order.seq, outcome, base, head if head != base else None).write(handoff)
    return None


def deliver_phase(
    settings: JobSettings, handoff: Path, work_result: str, env: dict[str, str] | None = None
) -> JobResult:
    """Check and push the agent's commits, then store the mission record (compare-and-swap)."""
    env = dict(os.environ if env is None else env)
    redactor = Redactor(env)
    token = push_token(env)
    remote = Remote(settings.workdir, token=token, remote=settings.remote, partial=settings.partial)
    state, run = read_run(remote, settings)
    if not awaits(run, settings.seq):
        return JobResult(None, None, 0, f"run {run.id} no longer waits for mission {settings.seq}: nothing to do")
    order = read_order_at(remote, state, run, settings.seq)
    handed = read_handoff(handoff, settings.seq)
    if handed is None:
        missing = f"The agent's job ended {work_result or 'unknown'} without handing over its outcome."
        handed = Handoff(order.seq, AgentOutcome(status=MissionStatus.CRASHED, answer=missing), None, None)
    outcome, commits = handed.outcome, 0
    satellites: dict[str, dict[str, Any]] = {}
    if handed.head is not None:
        outcome, commits = push_work(remote, run.branch, handed, handoff / BUNDLE_FILE)
    if handed.head is None or commits:  # a refused main push pushes no satellite either
        mine = replace(handed, outcome=outcome)
        written = env.get(SATELLITE_TOKEN) or token  # the satellites' own token, where the action was given one
        outcome, satellites = push_satellites(run, mine, handoff, main_url(remote), written, push_work)
    record = mission_record(
        run.id, order.seq, order.stage, order.kind, outcome, commits, redactor=redactor, assignment=assignment(order)
    )
    if satellites:
        record["satellites"] = satellites  # SPEC P4: their commits count as progress (app/runner/outcomes.py)
    git = delivered_state(remote, run, main_url(remote), token)
    if git is not None:
        record["git"] = redactor.data(git)  # SPEC E2, U7: what a decision file shows of the delivery
    path = mission_path(run.id, order.seq, order.stage)
    message = f"interlock: record of run {run.id} mission {order.seq} ({order.stage}) {outcome.status.value}"
    remote.add_files(settings.state_branch, {path: encode_json(record)}, message, run.id)  # placed by the run's layout
    summary = redactor.text(f"{message}; {commits} commit(s) pushed")
    return JobResult(path, outcome.status, commits, summary, str(record["answer"]))


def push_work(remote: Remote, branch: str, handed: Handoff, bundle: Path) -> tuple[AgentOutcome, int]:
    """Push the agent's commits if they fast-forward the run branch and leave workflow files alone; otherwise
    nothing is pushed and the mission fails, for a person to decide."""
    tip = remote.fetch(branch)
    try:
        head = remote.read_bundle(bundle, BUNDLE_REF)
    except InterlockError as exc:
        return _failed(handed.outcome, f"the agent's commits could not be read ({exc})"), 0
    if tip is None or head != handed.head or not remote.is_ancestor(tip, head):
        return _failed(handed.outcome, "the agent's commits do not fast-forward the run branch; nothing was pushed"), 0
    changed = remote.git("diff", "--name-only", tip, head).decode().splitlines()
    if any(path.startswith(PROTECTED) for path in changed):
        return _failed(handed.outcome, "the agent changed workflow files (.github/workflows); nothing was pushed"), 0
    commits = int(remote.git("rev-list", "--count", f"{tip}..{head}").decode())
    if not remote.push(head, branch):
        return _failed(handed.outcome, "the run branch moved while the agent worked; nothing was pushed"), 0
    return handed.outcome, commits


def read_run(remote: Remote, settings: JobSettings) -> tuple[str, Run]:
    state = remote.fetch(settings.state_branch)
    if state is None:
        raise JobError(f"the repository has no `{settings.state_branch}` branch: is Interlock installed?")
    raw = remote.show(state, record_path(settings.run_id))
    if raw is None:
        raise JobError(f"no run `{settings.run_id}` on `{settings.state_branch}`")
    return state, Run.from_journal(raw)


def awaits(run: Run, seq: int) -> bool:
    return run.waiting is not None and run.waiting.seq == seq


def read_order_at(remote: Remote, state: str, run: Run, seq: int) -> Order:
    """The order of mission ``seq`` at ``state``, found by its number in the folder the run's layout puts it in
    (``app/store/layout.py``: in v2, the bucket of ``seq``)."""
    folder = orders_folder(run.id)
    if remote.layout_at(state, run.id) == V2:
        folder = f"{folder}{bucket(seq)}/"
    names = [n for n in remote.names(state, folder) if n.startswith(numbered(seq))]
    data = remote.show(state, f"{folder}{names[0]}") if names else None
    if data is None:
        raise JobError(f"run `{run.id}` has no order for mission {seq}")
    try:
        return read_order(json.loads(data))
    except ValueError as exc:
        raise JobError(f"the order of mission {seq} is unreadable: {exc}") from None


def assignment(order: Order) -> Assignment | None:
    """Who the order meant to do a mission (its role, model, tools); none for a check, a decision or advice."""
    if order.check or order.kind in (MissionKind.DECIDE, MissionKind.ADVISOR):
        return None
    return Assignment(order.capability, order.role, order.model, order.tools)


def mission_agent(order: Order, settings: JobSettings) -> str | None:
    """The agent that answers ``order``: the advisor it names, else the agent of the role it names (SPEC U1),
    else the job's own (the workflow's ``agent`` input: only the fallback)."""
    return order.agent if order.kind is MissionKind.ADVISOR else order.agent or settings.agent


def _work(run: Run, order: Order, settings: JobSettings, env: dict[str, str], listed: tuple[str, ...]) -> AgentOutcome:
    """What the order asks for: the node's check, the advisor the order names (the repository's, written by
    the service; SPEC E4), or the job's own agent. Each within the job's timeout, in an environment built
    from an allow-list (``app/agents/environment.py``): the key variables of the agent that runs — none for
    a check — and the names a person listed. A role's model and tools go with the call."""
    read_token = env.get("INTERLOCK_READ_TOKEN")
    if order.check:  # SPEC V7: a verdict computed by code, which commits nothing
        return run_check(_call(run, order, settings, allowed_environment(env, listed, read_token)), order.check)
    spec = mission_agent(order, settings)
    call = _call(run, order, settings, allowed_environment(env, (*agent_keys(spec or ""), *listed), read_token))
    if order.kind is MissionKind.ADVISOR:
        return run_advisor(order.agent, call, order.prices)
    try:
        return agent_from_spec(spec or settings.agent, order.prices).run(call)
    except InterlockError as exc:  # a role naming an empty command: a failed mission, never a lost job
        return AgentOutcome(status=MissionStatus.FAILED, answer=f"The agent {spec!r} could not run: {exc}")


def _call(run: Run, order: Order, settings: JobSettings, environment: dict[str, str]) -> AgentCall:
    """The mission as the agent (or the check) sees it, with the environment the job allowed it."""
    return AgentCall(
        prompt=order.prompt,
        workdir=settings.workdir,
        run_id=run.id,
        stage=order.stage,
        capability=order.capability,
        visit=order.visit,
        mission=order.seq,
        kind=order.kind,
        session_id=order.session_id,
        model=order.model,
        tools=order.tools,
        timeout_s=settings.timeout_s,
        max_tokens=order.max_tokens,
        shorter=(lambda: order.shorter_prompt) if order.shorter_prompt else None,
        environment=environment,
    )


def _failed(outcome: AgentOutcome, why: str) -> AgentOutcome:
    return outcome.with_(status=MissionStatus.FAILED, answer=f"{outcome.answer}\n\n[Interlock: {why}]")
