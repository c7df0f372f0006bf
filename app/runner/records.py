"""What every mission leaves behind, in the job and on a local run alike: the check of a check node, the
advisor's call, and the mission record stored once beside the run record (SPEC C5), secrets masked.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.agents.base import AgentCall, AgentOutcome
from app.agents.command import run_process
from app.agents.environment import process_environment
from app.agents.prices import ModelPrice
from app.agents.spec import agent_from_spec
from app.engine.errors import InterlockError
from app.engine.record import MissionKind, MissionStatus, Usage
from app.redact import Redactor


@dataclass(frozen=True)
class Assignment:
    """Who the plan meant to do a mission: the capability, the role carrying it, the model and the tools the
    role names. Stored in the mission record beside the agent and model that actually ran, so the journey
    shows capability → role → agent → model, and a small model meant but not used shows (SPEC W2)."""

    capability: str
    role: str | None = None
    model: str | None = None
    tools: tuple[str, ...] = ()

    def json_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"capability": self.capability, "role": self.role, "model_asked": self.model}
        return {**data, "tools": list(self.tools)} if self.tools else data


def run_check(call: AgentCall, command: str) -> AgentOutcome:
    """A check node: the command's exit code is the verdict (SPEC V7); its output enters the context."""
    env = process_environment(call)  # in a job, the allow-list the job built (app/agents/environment.py)
    started = time.monotonic()
    code, out, err, timed_out = run_process(["/bin/sh", "-c", f"{command} 2>&1"], call, env, stdin="")
    status = MissionStatus.TIMEOUT if timed_out else MissionStatus.DONE
    output = Redactor().text((out + err).strip())  # masked before the cut, so no key is cut in half
    answer = f"$ {command}\n{output[-8000:]}\n(exit code {code})"
    return AgentOutcome(
        status=status,
        answer=answer,
        exit_code=code,
        agent="check",
        usage=Usage(calls=0),
        duration_s=round(time.monotonic() - started, 3),
    )


def run_advisor(spec: str | None, call: AgentCall, prices: Mapping[str, ModelPrice] | None = None) -> AgentOutcome:
    """The advisor's call (SPEC E4). No advisor configured, or one that cannot be started, is a failed call —
    no advice, so the default stands — never an exception that would lose the run's turn."""
    if not spec:
        return AgentOutcome(status=MissionStatus.FAILED, answer="No advisor is configured.", agent="advisor")
    try:
        return agent_from_spec(spec, prices).run(call)
    except InterlockError as exc:
        return AgentOutcome(status=MissionStatus.FAILED, answer=f"The advisor could not run: {exc}", agent="advisor")


def masked_outcome(outcome: AgentOutcome, redactor: Redactor | None = None) -> AgentOutcome:
    """An agent's outcome with its text masked: applied where an agent's answer enters Interlock, in every
    shell, so that the engine never holds a secret — nor the records, prompts, decision files, questions and
    printed lines made from its state. Default: the secrets of this process's environment."""
    redactor = redactor or Redactor()
    return outcome.with_(
        answer=redactor.text(outcome.answer),
        agent=redactor.text(outcome.agent),
        model=redactor.text(outcome.model) if outcome.model else outcome.model,
        sent_prompt=None if outcome.sent_prompt is None else redactor.text(outcome.sent_prompt),
    )


def mission_record(
    run_id: str,
    seq: int,
    stage: str,
    kind: MissionKind,
    outcome: AgentOutcome,
    commits: int = 0,
    prompt: str | None = None,
    redactor: Redactor | None = None,
    assignment: Assignment | None = None,
) -> dict[str, Any]:
    """The mission record, secrets masked (an agent may print a key it read). The prompt is kept when the
    engine's order is not stored elsewhere (a local run); the ``assignment`` says who was meant to do it."""
    record: dict[str, Any] = {
        "run": run_id,
        "seq": seq,
        "stage": stage,
        "kind": kind.value,
        **(assignment.json_data() if assignment is not None else {}),
        **outcome_data(outcome),
        "commits": commits,
        "finished_at": datetime.now(UTC).isoformat(),
    }
    if prompt is not None:
        record["prompt"] = prompt
    masked: dict[str, Any] = (redactor or Redactor()).data(record)
    return masked


def outcome_data(outcome: AgentOutcome) -> dict[str, Any]:
    """What an agent's outcome says, as JSON-ready data: in the mission record and in a job's hand-off."""
    return {
        "status": outcome.status.value,
        "answer": outcome.answer,
        "exit_code": outcome.exit_code,
        "usage": outcome.usage.json_data(),
        "session_id": outcome.session_id,
        "duration_s": outcome.duration_s,
        "agent": outcome.agent,
        "model": outcome.model,
        **({"tool_scope": outcome.tool_scope} if outcome.tool_scope else {}),
        **({"sent_prompt": outcome.sent_prompt} if outcome.sent_prompt is not None else {}),
    }
