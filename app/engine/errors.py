"""The one small error hierarchy of the engine. Every error carries the data a caller needs to explain it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.graph.validation_findings import Issue


class InterlockError(Exception):
    """Base of every error Interlock raises on purpose; anything else is a bug."""


class GraphInvalid(InterlockError):
    """A graph was refused (SPEC G3). ``issues`` holds every error found, not only the first."""

    def __init__(self, issues: Sequence[Issue], source: str = "graph") -> None:
        self.issues = tuple(issues)
        self.source = source
        first = self.issues[0].message if self.issues else "invalid graph"
        more = f" (and {len(self.issues) - 1} more)" if len(self.issues) > 1 else ""
        super().__init__(f"{source}: {first}{more}")


class TeamInvalid(InterlockError):
    """A team roster could not be read: ``problems`` lists what is wrong with it."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid team roster: " + "; ".join(self.problems))


class GraphFileError(InterlockError):
    """A graph file could not be read as JSON at all (missing, unreadable, too large, not JSON)."""

    def __init__(self, path: str, reason: str, *, readable: bool = True) -> None:
        self.path = path
        self.reason = reason
        self.readable = readable
        super().__init__(f"{path}: {reason}")


class EventRejected(InterlockError):
    """An event that makes no sense for the run as it stands (approving a run that waits at no gate,
    routing on a label the stage does not have). Nothing changed; ``message`` says why."""

    def __init__(self, run_id: str, status: str, event: str, message: str) -> None:
        self.run_id = run_id
        self.status = status
        self.event = event
        self.message = message
        super().__init__(f"run {run_id} ({status}): cannot apply {event}: {message}")


class StaleEvent(EventRejected):
    """A result for a mission the run no longer waits for (a late job after a resume, say)."""


class RunFinished(EventRejected):
    """The run is done or cancelled: it accepts no event any more."""


class RunNotFound(InterlockError):
    def __init__(self, run_id: str, where: str) -> None:
        self.run_id = run_id
        self.where = where
        super().__init__(f"no run {run_id!r} in {where}")


class VersionConflict(InterlockError):
    """Another writer saved the run first (SPEC J2): re-read it and re-apply the event."""

    def __init__(self, run_id: str, expected: int | None, found: int | None) -> None:
        self.run_id = run_id
        self.expected = expected
        self.found = found
        super().__init__(f"run {run_id!r} changed underneath: expected version {expected}, found {found}")


class GateRefused(EventRejected):
    """A person's review a gate does not count (SPEC H5, H6): of another commit than the one the gate opened on,
    or the requester's own where duties are separated. Nothing changed; the shell answers the review with
    ``message``, which says why."""
