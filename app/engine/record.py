"""The run record: everything the journal stores about one run (SPEC J1, S, P3).

Statuses, reason codes, mission kinds, advice and ledger categories are ``StrEnum``s whose values are exactly
the strings written to the journal, so a record read back with ``git show`` means what it says.
"""

from __future__ import annotations

from dataclasses import field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from app.engine.advice import Advice as Advice  # its own module: the record is long enough
from app.engine.base import OMITTED_WHEN_EMPTY, Record, journal_adapter
from app.engine.context import Context
from app.engine.cost_source import CostSource
from app.engine.gatemode import GateMode as GateMode  # its own module: the command line names it
from app.engine.graph.model import Policy
from app.engine.kinds import MissionKind as MissionKind  # its own module: the context names it too
from app.engine.raises import BudgetRaise, HeldCall


class Status(StrEnum):
    RUNNING = "running"
    GATE_WAIT = "gate_wait"
    AWAITING_INPUT = "awaiting_input"
    AWAITING_UPSTREAM = "awaiting_upstream"
    AWAITING_MERGE = "awaiting_merge"
    DONE = "done"
    FAILED = "failed"
    ESCALATED = "escalated"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"


RESUMABLE = frozenset(
    {
        Status.FAILED,
        Status.ESCALATED,
        Status.INTERRUPTED,
        Status.GATE_WAIT,
        Status.AWAITING_INPUT,
        Status.AWAITING_UPSTREAM,
    }
)
FINAL = frozenset({Status.DONE, Status.CANCELLED})


class ReasonCode(StrEnum):
    VISIT_BUDGET_EXHAUSTED = "visit_budget_exhausted"
    UNROUTABLE_VERDICT = "unroutable_verdict"
    MISSION_FAILED = "mission_failed"
    ATTEMPT_BUDGET_EXHAUSTED = "attempt_budget_exhausted"
    CALL_BUDGET_EXHAUSTED = "call_budget_exhausted"
    COST_BUDGET_EXHAUSTED = "cost_budget_exhausted"
    INVALID_SELECTION = "invalid_selection"
    UPSTREAM_REJECTED = "upstream_rejected"
    UPSTREAM_NOT_ALLOWED = "upstream_not_allowed"
    CITATION_MISSING = "citation_missing"  # a supervision run's request cites no finding in a checkable form (U6)
    CITATION_NOT_FOUND = "citation_not_found"  # ... or cites a file, commit, run or mission that does not exist
    UPSTREAM_CYCLE = "upstream_cycle"  # the request would come back to a team its chain already waits in (U3)
    UPSTREAM_UNFILEABLE = "upstream_unfileable"  # GitHub refused the request's issue (4xx): a person must act (U3)
    STOPPED = "stopped"
    GRAPH_MISMATCH = "graph_mismatch"  # the stored graph no longer has the content hash the run is pinned to (J7)
    BASE_CONFLICT = "base_conflict"  # the delivery conflicts with its base and its node has no CONFLICT edge (V9)


class Category(StrEnum):
    """Ledger categories (SPEC P3). A retry is ordinary delivery work and is charged as ``deliver``."""

    DELIVER = "deliver"
    REASK = "reask"
    AMEND = "amend"
    RESUME = "resume"
    DECIDE = "decide"
    ADVISOR = "advisor"
    CHECK = "check"


class MissionStatus(StrEnum):
    """How a mission ended, as the shell saw it. Only ``done`` lets the run route on its answer."""

    DONE = "done"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"  # never started: a stop was requested before it began (SPEC J4)


class Reason(Record):
    code: ReasonCode
    stage: str | None
    message: str


class Usage(Record):
    """What an agent reported spending. ``estimated`` marks figures the shell guessed (a cost from tokens
    times a price table); ``cost_usd`` is ``None`` when the cost is unknown, which is never the same as 0."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    seconds: float = 0.0
    estimated: bool = False
    # The requests a server received for the mission, as an HTTP agent counts them (issue 17): the ledger charges
    # those beyond the call charged at dispatch (SPEC P2). Never a usage file's `calls`, an agent's own count of
    # what Interlock never sent (SPEC P1: logical calls); left out of the journal while 0 (added after J6).
    requests: Annotated[int, OMITTED_WHEN_EMPTY] = 0
    # where cost_usd came from, and the shipped price table's date for an estimate from it (SPEC W3; issue 28):
    # left out of the journal while unset, as in every record before them (added after J6)
    source: Annotated[CostSource | None, OMITTED_WHEN_EMPTY] = None
    prices_as_of: Annotated[str, OMITTED_WHEN_EMPTY] = ""


class Totals(Record):
    """One ledger line: charges made before calls, results accepted, and real usage reported.

    ``cost_usd`` sums the known costs; ``unknown_costs`` counts the reports whose cost was unknown."""

    attempts: int = 0
    calls: int = 0
    units: float = 0.0
    accepted: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    estimated: bool = False
    unknown_costs: int = 0
    # how many reports came from each source, and the newest price table date among them (SPEC W3; OMITTED_WHEN_EMPTY)
    sources: Annotated[dict[CostSource, int], OMITTED_WHEN_EMPTY] = field(default_factory=dict)
    prices_as_of: Annotated[str, OMITTED_WHEN_EMPTY] = ""


class Ledger(Record):
    attempts: int = 0
    calls: int = 0
    units: float = 0.0
    accepted: int = 0
    by_category: dict[Category, Totals] = field(default_factory=dict)
    raises: list[BudgetRaise] = field(default_factory=list)  # the newest RAISE_WINDOW raises of limits (SPEC P5)
    raise_count: int = 0

    def spent_usd(self) -> float:
        """The known spend; see ``unknown_costs`` for what it leaves out."""
        return sum(line.cost_usd for line in self.by_category.values())

    def unknown_costs(self) -> int:
        return sum(line.unknown_costs for line in self.by_category.values())


class Window(Record):
    """The ledger figures when budgets were last armed: a person's resume re-arms them (SPEC B4)."""

    attempts: int = 0
    calls: int = 0
    units: float = 0.0
    cost_usd: float = 0.0
    unknown_costs: int = 0


class MissionSummary(Record):
    seq: int
    stage: str
    visit: int
    kind: MissionKind
    status: MissionStatus | None = None  # None while the mission is in flight
    verdict: str | None = None
    agent: str | None = None
    model: str | None = None
    duration_s: float | None = None
    usage: Usage = field(default_factory=Usage)
    session_id: str | None = None


class Gate(Record):
    stage: str
    verdict: str
    opened_at: datetime
    mission: int
    head: str | None = None  # the run branch head it opened on: an approval counts for it only (SPEC H5)


class UpstreamState(StrEnum):
    """Where a request filed upstream is (SPEC U3): its lifecycle, as the ``request:*`` labels show it, and the
    ways the shell can refuse to file it (SPEC U3, U6), each escalating the waiting run with its own reason."""

    OPEN = "open"
    ACCEPTED = "accepted"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    DELIVERED = "delivered"
    REJECTED = "rejected"
    REFUSED = "refused"  # a supervision run's cited finding does not exist (SPEC U6)
    CYCLE = "cycle"  # it would come back to a team waiting in its own chain
    UNFILEABLE = "unfileable"  # GitHub refused the issue with a 4xx


class Upstream(Record):
    target: str
    title: str
    body: str
    state: UpstreamState = UpstreamState.OPEN
    id: str | None = None


class Hop(Record):
    """One edge followed: the path a decision file retells."""

    stage: str
    verdict: str
    to: str
    visit: int
    by: str = "engine"
    commit: str = ""  # the commit a person approved at the gate that led here (SPEC H5)


class Request(Record):
    title: str
    body: str = ""
    origin: str = ""


class Waiting(Record):
    """A call the engine asked for and still waits on: a mission, a decision or an advisor's answer."""

    seq: int
    kind: MissionKind
    stage: str
    key: str
    session_id: str | None = None
    extra: str = ""


class Launch(Record):
    """How a run goes on: the agents, the configuration and the gates a shell drives it with (SPEC J1).

    A local run is started by one command and continued by others (``approve``, ``resume``...), maybe days
    later from another terminal; each must drive it with the agents of its start, never a default. The shell
    resolves its configuration and records it here as plain data, which the engine stores and never reads,
    except ``gates``: ``approve`` is autopilot. The run's start records one; a continuing command whose
    command line overrides a part (``changed``) records another, which is in force from then on.
    """

    command: str  # "run", or the continuing command that overrode a part
    at: datetime
    by: str = ""
    changed: list[str] = field(default_factory=list)  # the parts that command line overrode: agent, config, gates
    agents: dict[str, str] = field(default_factory=dict)  # the agent spec of "default", "decide", "advisor", "role:X"
    gates: GateMode | None = None  # None: ask on a terminal, else stop
    config_file: str | None = None
    config_sha256: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # the resolved configuration the shell rebuilds


class Choice(StrEnum):
    """What a person chose at a decision (SPEC E3): the engine's closed set of ways out of a stop."""

    RESUME = "resume"  # at the stage it stopped at, or at another (``taken`` says which)
    ROUTE = "route"  # on a verdict of the person's choice from the current stage
    DELIVER = "deliver"
    ABANDON = "abandon"
    BUDGET = "budget"  # a limit raised: the refused call is made (SPEC P5)
    CLOSED = "closed"  # the pull request was closed, merged or not, while the decision was open (issue 28)


class Decision(Record):
    """A stop handed to a person (SPEC E2, E3) and, once a person's command ended the wait, its outcome.

    ``options`` are the names the decision file offered and ``recommended`` the one the rules chose;
    ``taken`` is the option as the decision file names it (``resume at build``, ``route PASS``), ``by``
    and ``decided_at`` who chose it and when. ``number`` counts the run's decisions from 1: the record keeps
    only the newest ``DECISION_WINDOW``."""

    number: int
    asked_at: datetime
    stage: str
    reason: ReasonCode
    after_mission: int = 0  # the missions started before it: where it sits in the journey
    options: list[str] = field(default_factory=list)
    recommended: str = ""
    choice: Choice | None = None  # None while the run waits for a person
    taken: str = ""
    by: str = ""
    decided_at: datetime | None = None


class Chain(Record):
    """What a record vouches for (SPEC J6): the SHA-256 of its previous version as the journal stored it ("" for a
    run's first record) and of each mission record it references, by path. Written by the run driver after the
    engine's step, never read by the engine; a record older than tamper evidence has none."""

    previous: str = ""
    missions: dict[str, str] = field(default_factory=dict)


MISSION_WINDOW = 16
DECISION_WINDOW = 8
HOP_WINDOW = 24
KEY_WINDOW = 64
QUESTIONS_BYTES = 8000  # the questions a run waits on, kept in the record: bounded like the rest (SPEC J5)
RELAUNCH_WINDOW = 16


class Run(Record):
    """The run record (SPEC J1), written at every transition, gate and stop.

    The record stays bounded whatever the length of the run (SPEC J5): it keeps the latest
    ``MISSION_WINDOW`` mission summaries, ``HOP_WINDOW`` hops, ``RELAUNCH_WINDOW`` launch overrides,
    ``DECISION_WINDOW`` decisions and
    ``KEY_WINDOW`` idempotency keys, with counters for the totals. Keys leave the window oldest first;
    ``forgotten_before`` remembers the latest time of a key that left, so an event that old can no longer
    be proven new and is refused, never applied twice (SPEC J2). Every mission's full record is stored
    once, beside the run record, by the shell.
    """

    id: str
    graph: str
    graph_hash: str
    status: Status
    stage: str
    visits: dict[str, int] = field(default_factory=dict)
    context: Context
    recap: str = ""
    request: Request
    gate: Gate | None = None
    branch: str
    base: str
    head: str = ""  # the run branch's head as the newest event that read it said (SPEC H5)
    # files a merge into the base conflicts in, as the newest event that read git found (SPEC V9): the first
    # CONFLICTS_KEPT names and how many; left out of the journal while empty (added after J6: OMITTED_WHEN_EMPTY)
    conflicts: Annotated[list[str], OMITTED_WHEN_EMPTY] = field(default_factory=list)
    conflict_count: Annotated[int, OMITTED_WHEN_EMPTY] = 0
    requested_by: str = ""  # who started the run: with separate duties, never its gates' approver (SPEC H6)
    separate_duties: bool = False  # the team's rule at start (SPEC H6); the graph's `gates` may say it too
    reason: Reason | None = None
    ledger: Ledger = field(default_factory=Ledger)
    window: Window = field(default_factory=Window)
    policy: Policy = field(default_factory=Policy)
    upstream: Upstream | None = None
    upstream_allowed: list[str] = field(default_factory=list)  # where a request may be filed (U3, GH9)
    missions: list[MissionSummary] = field(default_factory=list)
    mission_count: int = 0
    path: list[Hop] = field(default_factory=list)
    hop_count: int = 0
    waiting: Waiting | None = None
    questions: str = ""  # what a person must answer while the run is awaiting_input (SPEC V6); else empty
    reasked: bool = False
    stop_requested: bool = False
    autopilot: bool = False
    advisor: bool = False
    team: str = ""  # the team the run belongs to (issue 13); "" in a journal older than teams
    supervision: bool = False  # a run of its team's `onRunEnd` graph: each request it files cites a finding (U6)
    satellites: list[str] = field(default_factory=list)  # other repositories its work may land in (SPEC U7)
    links: dict[str, str] = field(default_factory=dict)  # where the run lives for its shell: issue, comment, PR
    launch: Launch | None = None  # how a local run was started; None for a run started elsewhere
    relaunches: list[Launch] = field(default_factory=list)  # later overrides, oldest first: the last is in force
    decisions: list[Decision] = field(default_factory=list)  # the newest DECISION_WINDOW, oldest first (E2, E3)
    decision_count: int = 0
    held: HeldCall | None = None  # the call a budget refused, made when a person raises the limit (SPEC P5)
    applied: dict[str, datetime] = field(default_factory=dict)
    forgotten_before: datetime | None = None
    created_at: datetime
    updated_at: datetime
    version: int = 0
    chain: Chain | None = None  # SPEC J6; None in a record written before tamper evidence
    # the engine rules the transition was made under (app/engine/rules.py); 0 and left out of the journal when
    # it recorded none, as every record before issue 27 (added after J6: OMITTED_WHEN_EMPTY)
    rules: Annotated[int, OMITTED_WHEN_EMPTY] = 0
    # the routing lines this transition added (SPEC C3): its events file keeps them, so every routing line of the
    # run stays in the journal however much history the record trims (J5); rules 4 on (OMITTED_WHEN_EMPTY)
    routed: Annotated[list[str], OMITTED_WHEN_EMPTY] = field(default_factory=list)

    def mission(self, seq: int) -> MissionSummary | None:
        return next((m for m in reversed(self.missions) if m.seq == seq), None)

    def journal(self) -> dict[str, Any]:
        """The record as JSON-ready data, with the field names the journal and ``--json`` use."""
        return self.json_data()

    def journal_json(self) -> bytes:
        """The record as the journal file stores it: indented JSON, one field per line, so diffs read well."""
        data: bytes = journal_adapter(Run).dump_json(self, indent=1, by_alias=True, warnings="error")
        return data

    @classmethod
    def from_journal(cls, data: bytes | str | dict[str, Any]) -> Run:
        """A record read back from a journal, validated (raises pydantic's ``ValidationError``)."""
        adapter = journal_adapter(Run)
        run: Run = adapter.validate_python(data) if isinstance(data, dict) else adapter.validate_json(data)
        return run
