"""Mission kinds: what a dispatched mission or call is for, as the journal stores it.

In a module of their own because both the run record (its missions, what it waits on) and the context (each
result's header) name them, and the record is built on the context.
"""

from __future__ import annotations

from enum import StrEnum


class MissionKind(StrEnum):
    DELIVER = "deliver"
    REASK = "reask"
    AMEND = "amend"
    RESUME = "resume"
    RETRY = "retry"
    CHECK = "check"
    DECIDE = "decide"
    ADVISOR = "advisor"
