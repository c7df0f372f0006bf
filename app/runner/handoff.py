"""What the agent's job hands to the job that pushes: the outcome, and the agent's commits as a git bundle.

A mission runs in two jobs (``.github/workflows/interlock.yml``): ``work`` runs the agent with a read-only
token, ``deliver`` — which never runs anything from the checkout — checks the agent's commits and pushes
them with the write token. The agent shares its job with nothing that can write, and the hand-off is data:
a bundle that must fast-forward the run branch, and an outcome that becomes the mission record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.agents.base import AgentOutcome
from app.engine.base import journal_adapter
from app.engine.record import MissionStatus, Usage
from app.runner.records import outcome_data

OUTCOME_FILE = "outcome.json"
BUNDLE_FILE = "work.bundle"
BUNDLE_REF = "refs/interlock/mission"


@dataclass(frozen=True)
class Handoff:
    seq: int
    outcome: AgentOutcome
    base: str | None  # the run branch's head the agent started from; None when it never ran
    head: str | None  # the agent's last commit, when it made any

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        data = {"seq": self.seq, "base": self.base, "head": self.head, **outcome_data(self.outcome)}
        (folder / OUTCOME_FILE).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def read_handoff(folder: Path, seq: int) -> Handoff | None:
    """The hand-off of mission ``seq``; ``None`` when it is missing, unreadable or for another mission."""
    try:
        data = json.loads((folder / OUTCOME_FILE).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("seq") != seq:
            return None
        return Handoff(seq, outcome_from(data), _sha(data.get("base")), _sha(data.get("head")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def outcome_from(data: dict[str, Any]) -> AgentOutcome:
    usage: Usage = journal_adapter(Usage).validate_python(data.get("usage") or {})
    return AgentOutcome(
        status=MissionStatus(data["status"]),
        answer=str(data.get("answer", "")),
        exit_code=data["exit_code"] if isinstance(data.get("exit_code"), int) else None,
        usage=usage,
        session_id=data["session_id"] if isinstance(data.get("session_id"), str) else None,
        duration_s=float(data.get("duration_s") or 0.0),
        agent=str(data.get("agent") or ""),
        model=data["model"] if isinstance(data.get("model"), str) else None,
        tool_scope=data["tool_scope"] if isinstance(data.get("tool_scope"), str) else "",
    )


def _sha(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) not in (40, 64) or not all(c in "0123456789abcdef" for c in value):
        raise ValueError(f"not a commit id: {value!r}")
    return value
