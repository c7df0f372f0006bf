"""The advisor's answer (SPEC E4): its own module, so the run record stays under its size (``app/engine/record.py``
re-exports it, where the rest of the engine reads it)."""

from __future__ import annotations

from enum import StrEnum


class Advice(StrEnum):
    """The advisor's answer to a mission that ended badly (SPEC E4); the advisor call's summary keeps it as its
    verdict. Anything else the advisor says is no advice, and the default (escalation) stands."""

    RETRY = "retry"
    REVISE = "revise"  # with an instruction for the retry
    ESCALATE = "escalate"

    @classmethod
    def named(cls, word: str) -> Advice | None:
        """The advice ``word`` names, in any case; ``None`` for any other word."""
        try:
            return cls(word.lower())
        except ValueError:
            return None
