"""Executing one mission on disk: the check command or the agent, then the commit and the mission record.
Its event is made from that record (``app/runner/outcomes.py``), as the GitHub shell makes it from a job's.

The agent runs in the run's worktree and inherits the environment; the commit happens afterwards, in
Interlock's own code, with a message naming run, stage and mission. The full record of the mission —
prompt, answer, usage, timing, commits — is stored once beside the run record (SPEC C5, J5). Every answer
(an agent's, a check's, a decision's, the advisor's) is masked here, before the engine sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.agents.base import AgentCall, AgentOutcome
from app.agents.spec import agent_from_spec
from app.engine.effects import AskAdvisor, AskDecision, DispatchMission
from app.engine.events import Event, GitState, MissionFinished
from app.engine.prompt import assemble_prompt, overflow_parts
from app.engine.record import MissionKind, MissionStatus, Run
from app.engine.team import Role
from app.local import satellites
from app.local.config import (
    WAYS_TO_NAME_AN_AGENT,
    ConfigError,
    LocalConfig,
    agent_for,
    agent_spec,
    decide_spec,
    role_for,
)
from app.local.gitops import Repo, commit_work, commits_between, delivery_state, discard_changes, head_of, worktree
from app.redact import Redactor
from app.runner.outcomes import mission_record, outcome_event
from app.runner.records import Assignment, masked_outcome, run_advisor, run_check
from app.store.journal import encode_json, mission_path


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Done:
    """A finished mission: the event for the engine and the files to store with it."""

    event: Event
    files: dict[str, bytes]


def run_mission(
    repo: Repo,
    run: Run,
    effect: DispatchMission,
    config: LocalConfig,
    on_session: Callable[[str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> Done:
    tree = worktree(repo, run.branch, run.id)
    before = head_of(tree)
    role = role_for(config, effect.capability)
    trees = satellites.check_out(run)  # SPEC U7: each satellite's worktree, named in the prompt
    note = satellites.prompt_note(run, trees)
    prompt = assemble_prompt(effect.prompt, role) + note
    call = AgentCall(
        prompt=prompt,
        workdir=tree,
        run_id=run.id,
        stage=effect.stage,
        capability=effect.capability,
        visit=effect.prompt.visit,
        mission=effect.seq,
        kind=effect.kind,
        session_id=effect.session_id,
        model=role.model if role else None,
        tools=tuple(role.tools) if role else (),
        timeout_s=config.timeout_s,
        max_tokens=role.max_tokens if role else None,
        on_session=on_session,
        on_start=on_start,
        shorter=lambda: _shorter_prompt(effect, role, note),
    )
    outcome = masked_outcome(run_check(call, effect.check) if effect.check is not None else _run_agent(config, call))
    landed = _land(run, effect, tree, trees)
    commits = commits_between(tree, before, head_of(tree))
    git = satellites.with_state(delivery_state(repo, run.branch, run.base), run)
    call_of = (effect.seq, effect.stage, effect.key)
    return _finished(run.id, call_of, effect.kind, outcome, prompt, commits, git, _meant(effect, call, role), landed)


def _land(
    run: Run, effect: DispatchMission, tree: Path, trees: list[satellites.SatelliteTree]
) -> dict[str, dict[str, Any]]:
    """The mission's work committed in the run's worktree and each satellite's (their commits, by repository);
    a check's changes discarded instead: a check commits nothing (SPEC V7)."""
    if effect.check is not None:
        discard_changes(tree)
        satellites.discard(trees)
        return {}
    message = f"interlock({run.id}): {effect.stage} mission #{effect.seq} ({effect.kind.value})"
    commit_work(tree, message)
    return satellites.commit(trees, message)


def _meant(effect: DispatchMission, call: AgentCall, role: Role | None) -> Assignment | None:
    """Who was meant to do the mission (capability, role, model, tools); nobody for a check, which runs no agent."""
    if effect.check is not None:
        return None
    return Assignment(call.capability, role.name if role else None, call.model, call.tools)


def _shorter_prompt(effect: DispatchMission, role: Role | None, note: str) -> str | None:
    """The mission's prompt with its context compacted harder, for a server that found it too long for the
    model's context (issue 17); None when nothing is left to cut."""
    parts = overflow_parts(effect.prompt)
    return None if parts is None else assemble_prompt(parts, role) + note


def _finished(
    run_id: str,
    call: tuple[int, str, str],
    kind: MissionKind,
    outcome: AgentOutcome,
    prompt: str,
    commits: int = 0,
    git: GitState | None = None,
    assignment: Assignment | None = None,
    landed: dict[str, dict[str, Any]] | None = None,
) -> Done:
    """A finished call (``seq``, ``stage``, ``key``): its record (with who was meant to do it), and the event
    made from that record as the GitHub shell makes it from a job's (``app/runner/outcomes.py``)."""
    seq, stage, key = call
    record = mission_record(run_id, seq, stage, kind, outcome, commits, prompt=prompt, assignment=assignment)
    if landed:
        record["satellites"] = landed  # SPEC P4: their commits are progress too
    event = outcome_event(kind, record, key, now(), seq, git)
    return Done(event, {mission_path(run_id, seq, stage): encode_json(record)})


def _run_agent(config: LocalConfig, call: AgentCall) -> AgentOutcome:
    """The mission's agent; the record names it by the spec that chose it (``python agent.py``, not ``python``)."""
    agent, _role = agent_for(config, call.capability)
    return _named(agent.run(call), agent_spec(config, call.capability))


def _named(outcome: AgentOutcome, spec: str | None) -> AgentOutcome:
    return outcome.with_(agent=Redactor().text(spec)) if spec else outcome


def skipped(run: Run, effect: DispatchMission) -> Done:
    """The stop was requested before the mission started: report it not started (SPEC J4)."""
    event = MissionFinished(key=effect.key, at=now(), seq=effect.seq, status=MissionStatus.SKIPPED)
    return Done(event, {})


def _side_call(
    run: Run, stage: str, seq: int, prompt: str, kind: MissionKind, workdir: Path, timeout_s: float
) -> AgentCall:
    """A call that is not a mission of the node (a decision, advice): same protocol, its own kind."""
    return AgentCall(
        prompt=prompt,
        workdir=workdir,
        run_id=run.id,
        stage=stage,
        capability=kind.value,
        visit=run.visits.get(stage, 0),
        mission=seq,
        kind=kind,
        timeout_s=timeout_s,
    )


def decide(run: Run, effect: AskDecision, config: LocalConfig, workdir: Path) -> Done:
    spec = decide_spec(config)
    if not spec:
        raise ConfigError(f"no agent makes the decision of {effect.stage!r}: {WAYS_TO_NAME_AN_AGENT}")
    timeout = min(config.timeout_s, 300)
    call = _side_call(run, effect.stage, effect.seq, effect.prompt, MissionKind.DECIDE, workdir, timeout)
    outcome = masked_outcome(_named(agent_from_spec(spec, config.prices).run(call), spec))
    return _finished(run.id, (effect.seq, effect.stage, effect.key), MissionKind.DECIDE, outcome, effect.prompt)


def advise(run: Run, effect: AskAdvisor, config: LocalConfig, workdir: Path) -> Done:
    """Ask the advisor once, for ``advisor_timeout_s`` at most; an advisor that is off, slow, crashing or
    unreadable gives no advice, and the default stands: the run goes to a person (SPEC E4). Its usage is the
    ``advisor`` line of the ledger (P3). The advisor advises and edits nothing: whatever it changed in the
    worktree is discarded, so the next mission's commit carries only that mission's work."""
    call = _side_call(
        run, effect.stage, effect.seq, effect.question, MissionKind.ADVISOR, workdir, config.advisor_timeout_s
    )
    outcome = masked_outcome(run_advisor(config.advisor, call, config.prices))
    discard_changes(workdir)
    return _finished(run.id, (effect.seq, effect.stage, effect.key), MissionKind.ADVISOR, outcome, effect.question)
