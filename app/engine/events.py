"""Events: everything that can happen to a run. Each carries its own time and an idempotency key
(a webhook delivery id, a mission id): applying the same key twice changes nothing (SPEC J2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from app.engine.context import Tiers
from app.engine.graph.model import Policy
from app.engine.record import Advice, Launch, MissionStatus, UpstreamState, Usage


@dataclass(frozen=True)
class GitState:
    """The delivery's git state, supplied by the shell so the engine can write a decision file (E2).

    ``ahead`` counts the branch's commits missing from its base, the empty start commit among them;
    ``files_changed`` are the files the branch changes against the base (a diff from their merge base), so
    commits that net to no change leave it empty. Only ``files_changed`` says the branch has work."""

    head: str = ""
    ahead: int = 0
    files_changed: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    satellites: tuple[tuple[str, GitState], ...] = ()  # each satellite repository's own state (SPEC U7)

    def has_work(self) -> bool:
        """Whether the run branch or any satellite's changes files against its base."""
        return bool(self.files_changed) or any(state.has_work() for _, state in self.satellites)

    def conflicting(self) -> bool:
        return bool(self.conflicts) or any(state.conflicting() for _, state in self.satellites)


@dataclass(frozen=True, kw_only=True)
class Event:
    key: str
    at: datetime
    by: str = ""
    git: GitState | None = None
    launch: Launch | None = None  # a start's launch, or a person's command overriding how the run goes on


@dataclass(frozen=True, kw_only=True)
class Start(Event):
    run_id: str
    title: str
    body: str = ""
    origin: str = ""
    branch: str = ""
    base: str = "develop"
    policy: Policy | None = None
    tiers: Tiers = field(default_factory=Tiers)
    autopilot: bool = False
    advisor: bool = False
    links: dict[str, str] = field(default_factory=dict)
    upstream: tuple[str, ...] = ()  # the repositories a NEEDS_UPSTREAM request may go to (owner/repo, owner/*)
    team: str = ""  # the team the run belongs to (issue 13); "" where there are no teams
    supervision: bool = False  # a supervision run (SPEC U6): its requests must cite findings
    satellites: tuple[str, ...] = ()  # the team's other repositories, owner/name, where work may land (SPEC U7)
    separate_duties: bool = False  # the team's rule: the requester may not approve the run's gates (SPEC H6)


@dataclass(frozen=True, kw_only=True)
class Linked(Event):
    """The shell made something the run refers to (a pull request, a status comment): remember where."""

    links: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class MissionFinished(Event):
    seq: int
    status: MissionStatus
    answer: str = ""
    usage: Usage = field(default_factory=Usage)
    commits: int = 0
    session_id: str | None = None
    exit_code: int | None = None
    duration_s: float | None = None
    agent: str | None = None
    model: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionStarted(Event):
    """The agent of mission ``seq`` named its own session while still working. Kept in the in-flight record
    at once, so that a resume after the runner died continues that session (SPEC J3)."""

    seq: int
    session_id: str


@dataclass(frozen=True, kw_only=True)
class GateApproved(Event):
    """``commit``: what the person reviewed (SPEC H5); ``None`` when the shell cannot say, "" for none named."""

    note: str = ""
    commit: str | None = None


@dataclass(frozen=True, kw_only=True)
class GateAmended(Event):
    note: str
    commit: str | None = None  # as for an approval (SPEC H5)


@dataclass(frozen=True, kw_only=True)
class StopRequested(Event):
    """``hold``: a team's stop (SPEC H4): a run waiting on a person or upstream is held at its next transition
    rather than stopped at once, so that the approval, the answer or the upstream outcome it waits for is kept."""

    hold: bool = False


@dataclass(frozen=True, kw_only=True)
class StopWithdrawn(Event):
    """A team started again before its held run reached its next transition: the run goes on as if not stopped."""


@dataclass(frozen=True, kw_only=True)
class Resume(Event):
    stage: str | None = None


@dataclass(frozen=True, kw_only=True)
class RouteChosen(Event):
    verdict: str
    stage: str | None = None  # route from this stage (``--at``): the stage whose edge a refused visit was on


@dataclass(frozen=True, kw_only=True)
class Deliver(Event):
    pass


@dataclass(frozen=True, kw_only=True)
class Abandon(Event):
    pass


@dataclass(frozen=True, kw_only=True)
class InputAnswered(Event):
    text: str


@dataclass(frozen=True, kw_only=True)
class UpstreamChanged(Event):
    """The request filed upstream moved on (SPEC U3), or the shell could not file it; ``id`` where its outcome is
    (the pull request), and ``summary`` what the waiting run's next mission reads of it."""

    state: UpstreamState
    id: str | None = None
    summary: str = ""
    note: str = ""  # why the shell refused to file it (refused, cycle, unfileable)


@dataclass(frozen=True, kw_only=True)
class Merged(Event):
    pass


@dataclass(frozen=True, kw_only=True)
class Closed(Event):
    pass


@dataclass(frozen=True, kw_only=True)
class DecisionReturned(Event):
    seq: int
    answer: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, kw_only=True)
class AdviceReturned(Event):
    """The advisor's answer: ``retry``, ``revise`` (with ``instruction``), ``escalate``, or ``None`` when it
    was off, slow or unparseable — in which case the deterministic default stands (SPEC E4). ``status`` is how
    the advisor's call ended, for the record."""

    seq: int
    advice: Advice | None
    instruction: str = ""
    usage: Usage = field(default_factory=Usage)
    status: MissionStatus = MissionStatus.DONE


@dataclass(frozen=True, kw_only=True)
class BudgetRaised(Event):
    """A person raised the limits of a run a budget stopped (SPEC P5): ``amounts`` by limit word (``calls``,
    ``units``, ``usd``, ``attempts``), as ``app.engine.raises.parse_raise`` reads them. The refused call is made."""

    amounts: dict[str, float]


@dataclass(frozen=True, kw_only=True)
class GraphMismatched(Event):
    """The graph stored with the run no longer has the content hash the run is pinned to (SPEC J7): the shell
    found it at a load, and the run stops rather than go on on a graph nobody started it on. ``found``: the hash
    the stored graph has now."""

    found: str


@dataclass(frozen=True, kw_only=True)
class GraphUpgraded(Event):
    """A person moved the run to another version of its graph (SPEC J7): applied with that graph, whose content
    hash is ``graph_hash``."""

    graph_hash: str
