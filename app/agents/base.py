"""The agent protocol (ARCHITECTURE "Interfaces"): what every adapter receives and returns.

An agent is a command run in the run's working tree. It gets the mission prompt on standard input and in
``$INTERLOCK_PROMPT_FILE``, with ``INTERLOCK_*`` variables naming the mission; it prints its answer; exit
0 means done. It may write usage JSON to ``$INTERLOCK_USAGE_FILE``. Presets translate this for known
agent CLIs and HTTP APIs, so a scripted agent is a short shell script.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from app.engine.cost_source import CostSource
from app.engine.record import MissionKind, MissionStatus, Usage

DEFAULT_TIMEOUT_S = 3600.0
# The longest answer a chat API may write when the role sets no `maxTokens`: both HTTP presets send it, so a
# model cannot write until its context is full and push the next prompt past it (issue 17).
DEFAULT_MAX_TOKENS = 8192
# A decision answers one label of a closed list (SPEC V8) and has no role to bound it: a small bound keeps a
# small model's decision within its context (issue 17).
DECISION_MAX_TOKENS = 512
NOT_ENFORCED = "not enforced"  # what the record and the journey say of a whitelist an agent cannot keep to
WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"})  # tools that can change files


@dataclass(frozen=True)
class AgentCall:
    """One mission as the agent sees it."""

    prompt: str
    workdir: Path
    run_id: str
    stage: str
    capability: str
    visit: int
    mission: int
    kind: MissionKind = MissionKind.DELIVER
    session_id: str | None = None
    tools: tuple[str, ...] = ()
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_tokens: int | None = None  # the role's bound on the answer's tokens; None: DEFAULT_MAX_TOKENS
    env: dict[str, str] = field(default_factory=dict)
    # The whole environment of the agent's process before the mission's variables, when the caller built one
    # from an allow-list (an Actions job: app/agents/environment.py); None inherits the caller's (a local run).
    environment: dict[str, str] | None = None
    # Called with the agent's own session id as soon as the agent reveals it, while it still works: the
    # shell keeps it in the in-flight record, so a resume after the runner died continues it (SPEC J3).
    on_session: Callable[[str], None] | None = field(default=None, compare=False, repr=False)
    # Called with the agent's process id (the leader of its own process group) once it is started: the local
    # shell writes it down, so that an agent left running by a runner that died is stopped before the run
    # goes on (app/local/leftovers.py).
    on_start: Callable[[int], None] | None = field(default=None, compare=False, repr=False)
    # Builds the same mission's prompt with its context compacted harder (``app.engine.prompt.overflow_parts``),
    # or None when nothing is left to cut: an HTTP agent whose server says the prompt exceeds the model's
    # context retries once with it. None (a job's order, a decision): no shorter prompt exists.
    shorter: Callable[[], str | None] | None = field(default=None, compare=False, repr=False)

    def variables(self) -> dict[str, str]:
        return {
            "INTERLOCK_RUN_ID": self.run_id,
            "INTERLOCK_STAGE": self.stage,
            "INTERLOCK_CAPABILITY": self.capability,
            "INTERLOCK_VISIT": str(self.visit),
            "INTERLOCK_MISSION": str(self.mission),
            "INTERLOCK_KIND": self.kind.value,
            "INTERLOCK_WORKDIR": str(self.workdir),
            **({"INTERLOCK_SESSION_ID": self.session_id} if self.session_id else {}),
            **({"INTERLOCK_MODEL": self.model} if self.model else {}),
        }


@dataclass(frozen=True)
class AgentOutcome:
    status: MissionStatus
    answer: str
    exit_code: int | None = None
    usage: Usage = field(default_factory=Usage)
    session_id: str | None = None
    duration_s: float = 0.0
    agent: str = ""
    model: str | None = None
    # How the agent kept to the role's tool whitelist: the flags that enforce it, or NOT_ENFORCED; "" when
    # the mission had no whitelist (SPEC U1).
    tool_scope: str = ""
    # The prompt the agent sent in the end when it was not the call's: an HTTP agent's retry of a context
    # overflow with its context cut (issue 17). The mission record keeps it beside the prompt it was given.
    sent_prompt: str | None = None

    def with_(self, **changes: Any) -> AgentOutcome:
        return replace(self, **changes)


class Agent(Protocol):
    name: str

    def run(self, call: AgentCall) -> AgentOutcome: ...


def tool_name(tool: str) -> str:
    """The tool a whitelist entry names: ``Edit`` of ``Edit(src/**)``, ``Bash`` of ``Bash(git:*)``."""
    return tool.split("(", 1)[0].strip()


def tool_scope(agent: object, tools: tuple[str, ...]) -> str:
    """How ``agent`` keeps to ``tools``: what its own ``tool_scope`` says, else (an agent that has none)
    NOT_ENFORCED; "" for no whitelist. Never silence: a whitelist nobody enforces is said to be so."""
    if not tools:
        return ""
    scope = getattr(agent, "tool_scope", None)
    return str(scope(tools)) if callable(scope) else NOT_ENFORCED


def read_usage(path: Path) -> tuple[Usage, str | None, str | None, str]:
    """Usage an agent wrote to ``$INTERLOCK_USAGE_FILE``: (usage, model, session id, problem or "").

    A missing file is normal (the agent reports nothing); a malformed one is noted, never fatal.
    """
    if not path.exists() or path.stat().st_size == 0:
        return Usage(source=CostSource.NOT_REPORTED), None, None, ""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not an object")
        usage = Usage(
            calls=int(data.get("calls", 1)),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=_cost(data.get("cost_usd", 0.0)),
            estimated=bool(data.get("estimated", False)),
            source=_source(data),
        )
        if not all(chargeable(figure) for figure in figures(usage)):
            raise ValueError("a figure is negative or not a finite number")
        model = data.get("model") if isinstance(data.get("model"), str) else None
        session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
        return usage, model, session, ""
    except (ValueError, TypeError, OverflowError, RecursionError, UnicodeDecodeError) as exc:
        return (
            Usage(source=CostSource.NOT_REPORTED),
            None,
            None,
            f"usage file ignored: {type(exc).__name__}: {str(exc)[:200]}",
        )


def chargeable(value: Any) -> bool:
    """A usage figure a budget can charge and a metric count: a finite number, never below 0 (a negative one
    would lower the charge and run a counter backwards; NaN is saved as ``null`` and leaves a record no one
    can load). A bool is no number. The one rule for every figure an agent or a stored record reports."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def figures(usage: Usage) -> list[float]:
    """The figures a budget charges and metrics count: none may be negative (it would lower the charge and run a
    counter backwards) or NaN (saved as ``null``, it leaves a record no one can load)."""
    cost = [] if usage.cost_usd is None else [usage.cost_usd]
    return [usage.calls, usage.input_tokens, usage.output_tokens, *cost]


def _source(data: dict[str, Any]) -> CostSource:
    """Where a usage file's cost came from (SPEC W3): the agent's word, its unknown (``null``), or none at all."""
    if "cost_usd" not in data:
        return CostSource.NOT_REPORTED
    return CostSource.UNKNOWN if data["cost_usd"] is None else CostSource.REPORTED


def _cost(value: Any) -> float | None:
    """A reported cost; ``null`` says the agent does not know it, which is not the same as free."""
    return None if value is None else float(value)
