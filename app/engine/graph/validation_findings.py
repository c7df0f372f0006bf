"""What validation finds: issues with a stable code, and the outcome of validating one graph (SPEC G3, G4).

The codes are an interface people script against (``interlock validate --json``), so they are an enum
whose values never change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.engine.graph.model import Graph


class IssueCode(StrEnum):
    SCHEMA = "schema"
    ENTRY_MISSING = "entry-missing"
    ENTRY_UNKNOWN = "entry-unknown"
    DUPLICATE_STAGE = "duplicate-stage"
    RESERVED_NAME = "reserved-name"
    BAD_MAX_VISITS = "bad-max-visits"
    EDGE_FROM_UNKNOWN = "edge-from-unknown"
    EDGE_TO_UNKNOWN = "edge-to-unknown"
    EDGE_VERDICT_MISSING = "edge-verdict-missing"
    DUPLICATE_VERDICT = "duplicate-verdict"
    NO_TERMINATION = "no-termination"
    CAPABILITY_UNCARRIED = "capability-uncarried"
    UNREACHABLE_NODE = "unreachable-node"
    TRAP_NODE = "trap-node"
    POINTLESS_DECIDE = "pointless-decide"
    CANNOT_FINISH = "cannot-finish"  # SPEC G7
    USELESS_LIMIT = "useless-limit"  # SPEC G7


WARNING_CODES = frozenset(
    {
        IssueCode.CAPABILITY_UNCARRIED,
        IssueCode.UNREACHABLE_NODE,
        IssueCode.TRAP_NODE,
        IssueCode.POINTLESS_DECIDE,
        IssueCode.CANNOT_FINISH,
        IssueCode.USELESS_LIMIT,
    }
)


@dataclass(frozen=True)
class Issue:
    code: IssueCode
    message: str
    stage: str | None = None
    edge: int | None = None

    @property
    def is_error(self) -> bool:
        return self.code not in WARNING_CODES

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, "stage": self.stage, "edge": self.edge, "message": self.message}


@dataclass(frozen=True)
class Validation:
    """The outcome of validating one graph: every issue, and the graph itself when it has no error."""

    issues: tuple[Issue, ...]
    graph: Graph | None

    @property
    def errors(self) -> tuple[Issue, ...]:
        return tuple(issue for issue in self.issues if issue.is_error)

    @property
    def warnings(self) -> tuple[Issue, ...]:
        return tuple(issue for issue in self.issues if not issue.is_error)

    @property
    def valid(self) -> bool:
        return self.graph is not None
