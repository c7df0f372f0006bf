"""The one small error hierarchy of the engine. Every error carries the data a caller needs to explain it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.validate import Issue


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
