"""A transition as the run driver saved it, in the words metrics and traces need (SPEC W6).

Why its own record: every shell's transitions go through one driver, which hands each saved one to whoever
watches (``app/runner/observe.py``); the metrics of the service and the traces both read the same few facts
(the run before and after, the event, when it was applied, the mission whose outcome it carried), so they
are worked out once, here, from the engine's own record rather than guessed again by each reader.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.budget import CATEGORY_OF
from app.engine.events import AdviceReturned, DecisionReturned, Event, MissionFinished
from app.engine.record import Category, MissionSummary, Run, Usage

MissionEvent = MissionFinished | DecisionReturned | AdviceReturned  # the events that carry a mission's outcome


@dataclass(frozen=True)
class Saved:
    """One saved transition: ``before`` is ``None`` for a start; ``started``/``ended`` are wall-clock seconds
    (``time.time()``) around the driver's work on it, compare-and-swap retries included."""

    before: Run | None
    event: Event
    after: Run
    started: float
    ended: float

    @property
    def kind(self) -> str:
        """The event's kind: the name of its engine class, one of a closed set (``Start``, ``MissionFinished``...)."""
        return type(self.event).__name__

    @property
    def repository(self) -> str:
        """Where the run lives: ``owner/name`` for a run started from an issue on GitHub (its origin is
        ``owner/name#N``), else the origin as it is (``local`` for a run started on this machine)."""
        origin = self.after.request.origin
        return origin.split("#", 1)[0] if "#" in origin else origin

    def mission(self) -> MissionSummary | None:
        """The mission whose outcome this transition applied, as the record keeps it; ``None`` for any other."""
        if not isinstance(self.event, MissionEvent):
            return None
        return self.after.mission(self.event.seq)

    def usage(self) -> Usage | None:
        """What the mission's agent reported spending, as the event carried it (the engine charged it to the
        ledger line ``category()`` names)."""
        return self.event.usage if isinstance(self.event, MissionEvent) else None

    def category(self) -> Category | None:
        """The ledger category the mission's usage went to (SPEC P3)."""
        mission = self.mission()
        return CATEGORY_OF[mission.kind] if mission is not None else None

    def verdict(self) -> str | None:
        """The verdict this transition routed on: the mission's, or the newest hop's when it added one."""
        mission = self.mission()
        if mission is not None and mission.verdict:
            return mission.verdict
        hops_before = self.before.hop_count if self.before is not None else 0
        if self.after.hop_count > hops_before and self.after.path:
            return self.after.path[-1].verdict
        return None
