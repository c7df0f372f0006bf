"""What validation finds: issues with a stable code, and the outcome of validating one graph (SPEC G3, G4).

The codes are an interface people script against (``interlock validate --json``), so they are an enum
whose values never change. ``CODES`` is the one table of what each code means and whether it refuses the graph:
the validator reads an issue's severity from it, and the reference page ``docs/reference/validation-codes.md`` is
generated from it (``python -m tests.regen_reference``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
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


class IssueSeverity(StrEnum):
    ERROR = "error"  # the graph is refused (SPEC G3)
    WARNING = "warning"  # the graph is accepted (SPEC G4, G7)


@dataclass(frozen=True)
class CodeInfo:
    """What a code means (Markdown, as the reference page shows it) and the SPEC rules it checks."""

    severity: IssueSeverity
    meaning: str
    rules: tuple[str, ...]


_E, _W = IssueSeverity.ERROR, IssueSeverity.WARNING
CODES: Mapping[IssueCode, CodeInfo] = MappingProxyType(
    {
        IssueCode.SCHEMA: CodeInfo(
            _E,
            'not a JSON object, wrong type, missing or unknown key (with a "did you mean"); a name (graph, entry, '
            "stage, capability, edge end or label, key) holding a control character or a lone surrogate, or any text "
            "holding a NUL or a lone surrogate: no shell, ref or UTF-8 file can carry it",
            ("G1", "G3"),
        ),
        IssueCode.ENTRY_MISSING: CodeInfo(_E, "no `entry`", ("G3",)),
        IssueCode.ENTRY_UNKNOWN: CodeInfo(_E, "`entry` names no node", ("G3",)),
        IssueCode.DUPLICATE_STAGE: CodeInfo(_E, "two nodes with one stage name", ("G3",)),
        IssueCode.RESERVED_NAME: CodeInfo(
            _E, "a node called `__end__`, or an edge labelled `NEEDS_INPUT` / `NEEDS_UPSTREAM`", ("G2", "G3")
        ),
        IssueCode.BAD_MAX_VISITS: CodeInfo(_E, "`maxVisits` below 1", ("G3", "B1")),
        IssueCode.EDGE_FROM_UNKNOWN: CodeInfo(_E, "an edge starts from no node", ("G3",)),
        IssueCode.EDGE_TO_UNKNOWN: CodeInfo(_E, "an edge goes to neither a node nor `__end__`", ("G3",)),
        IssueCode.EDGE_VERDICT_MISSING: CodeInfo(_E, "an edge without a label", ("G3",)),
        IssueCode.DUPLICATE_VERDICT: CodeInfo(
            _E, "two edges of one node with the same label, compared without regard to case", ("G3",)
        ),
        IssueCode.NO_TERMINATION: CodeInfo(
            _E, "no node without outgoing edges and no edge to `__end__` is reachable from the entry", ("G3",)
        ),
        IssueCode.CAPABILITY_UNCARRIED: CodeInfo(
            _W, "(with `--team`) no role carries the capability; the full-authority role will do it", ("G4", "U1")
        ),
        IssueCode.UNREACHABLE_NODE: CodeInfo(_W, "the node cannot be reached from the entry", ("G4",)),
        IssueCode.TRAP_NODE: CodeInfo(_W, "no termination can be reached from the node", ("G4",)),
        IssueCode.POINTLESS_DECIDE: CodeInfo(_W, "`decide` on a node with fewer than two labels", ("G4", "V8")),
        IssueCode.CANNOT_FINISH: CodeInfo(
            _W,
            "the policy's `maxAttempts`, `maxCalls` or `maxUnits` is below what the cheapest path to `__end__` takes, "
            "or no path can be taken (a check answers only PASS or FAIL): no run can finish",
            ("G7",),
        ),
        IssueCode.USELESS_LIMIT: CodeInfo(
            _W, "a policy limit above the worst case of any run: it never stops a run", ("G7",)
        ),
    }
)
WARNING_CODES = frozenset(code for code, info in CODES.items() if info.severity is IssueSeverity.WARNING)


@dataclass(frozen=True)
class Issue:
    code: IssueCode
    message: str
    stage: str | None = None
    edge: int | None = None

    @property
    def severity(self) -> IssueSeverity:
        return CODES[self.code].severity

    @property
    def is_error(self) -> bool:
        return self.severity is IssueSeverity.ERROR

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
