"""Which engine rules built a transition (SPEC J6): a version number, recorded in the record and its events file.

Why: ``interlock verify`` replays each recorded transition through the engine. When the engine's rules change
(how a decision's answer is read, how much history a record keeps), a journal nobody edited would replay to
other records under today's rules and show engine drift. So every transition records the rules it was made
under, the engine keeps the older rules reachable through the small table ``SINCE`` below, and ``verify``
replays each transition with its own rules: old journals verify under old rules, new ones under new rules.

Interlock recorded no rules before issue 27 (the record's ``rules`` is then absent, read as 0). Such a
transition was made under rules 1, 2 or 3 — which one the journal cannot say — so ``verify`` accepts it when
one of them gives the record it recorded (the hash chain still vouches for every byte). A version this
Interlock does not know (a newer Interlock wrote it) is refused with ``UnknownRules``, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.engine.errors import InterlockError


class Change(StrEnum):
    """A change of the engine's rules that gives another record for the same history."""

    TRIMMED_HISTORY = "trimmed history"  # issue 16: the history keeps its newest HISTORY_CHARS (SPEC J5)
    LABEL_OR_NONE = "label or none"  # issue 17: a decision chooses a label of the list or none (SPEC V8)
    ROUTING_JOURNALLED = "routing journalled"  # issue 27: a record names the routing lines it added (SPEC C3)
    REFUSED_EDGE_OFFERED = "refused edge offered"  # issue 28: a refused visit offers a route from the edge's source
    CLOSED_DECISION = "closed decision"  # issue 28: a pull request closed while a decision is open closes it
    ROUTE_OPENS_GATE = "route opens gate"  # issue 28: a route past a stage with a human gate opens its gate (H1)


SINCE: dict[Change, int] = {
    Change.TRIMMED_HISTORY: 2,
    Change.LABEL_OR_NONE: 3,
    Change.ROUTING_JOURNALLED: 4,
    Change.REFUSED_EDGE_OFFERED: 4,
    Change.CLOSED_DECISION: 4,
    Change.ROUTE_OPENS_GATE: 5,
}
"""The first rules version each change belongs to; every version before it keeps the rule it replaced."""

RULES_VERSION = 5  # the rules this engine makes transitions under: the newest of SINCE, recorded since issue 27
UNRECORDED = (3, 2, 1)  # the rules a transition recording none may have been made under, the likeliest first
NOT_RECORDED = 0  # the record's ``rules`` when a transition recorded none (Interlock before issue 27)


@dataclass(frozen=True)
class Rules:
    """The rules one transition is made under: ``version`` decides the behaviour; ``recorded`` False models
    Interlock before issue 27, whose records carry no ``rules`` (used to replay such transitions)."""

    version: int = RULES_VERSION
    recorded: bool = True

    def __post_init__(self) -> None:
        if not self.recorded and self.version not in UNRECORDED:  # no Interlock that recorded none had it
            raise ValueError(f"rules {self.version} were always recorded: only rules {UNRECORDED} went unrecorded")

    def has(self, change: Change) -> bool:
        return self.version >= SINCE[change]

    @property
    def stamp(self) -> int:
        """What the record says: the version, or ``NOT_RECORDED``."""
        return self.version if self.recorded else NOT_RECORDED


CURRENT = Rules()  # read at each step, not bound at import: the rules every shell makes transitions under


class UnknownRules(InterlockError):
    """A transition recorded under rules this Interlock does not know: a newer Interlock made it."""

    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__(
            f"it was made under engine rules {version}, which this Interlock does not know (it knows rules 1 to "
            f"{RULES_VERSION}): verify it with the Interlock that wrote it, or a newer one"
        )


def replaying(recorded: int) -> tuple[Rules, ...]:
    """The rules to replay a transition with, given the version it recorded: its own, or for one that recorded
    none the rules of Interlock before issue 27, modelled as recording none too."""
    if recorded == NOT_RECORDED:
        return tuple(Rules(version, recorded=False) for version in UNRECORDED)
    if 1 <= recorded <= RULES_VERSION:
        return (Rules(recorded),)
    raise UnknownRules(recorded)
