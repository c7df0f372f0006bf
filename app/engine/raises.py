"""Raising a run's budget (SPEC P5): what a person may raise, how a raise is written, and what the ledger keeps.

A run stopped by a policy limit has paid for everything it did; throwing that away, or resuming in a way that
re-runs an accepted mission, would pay twice. So the call the budget refused is remembered (``HeldCall``) and a
raise makes exactly that call. The comment command and the CLI write a raise the same way
(``calls=+10 usd=+2``): one parser here, for both shells, so that they refuse the same things with the same words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from app.engine.base import Record
from app.engine.errors import InterlockError
from app.engine.graph.model import Policy
from app.engine.kinds import MissionKind
from app.engine.quoted import quoted

RAISE_WINDOW = 16  # raises the ledger keeps (SPEC J5); ``raise_count`` counts them all
HELD_BYTES = 8000  # the text a held call carries (its note, the answer a decision reads, the failure advised on)

# each raisable limit: the word a person writes, the policy field it raises, its name in the graph, whole or not
LIMITS: dict[str, tuple[str, str, bool]] = {
    "attempts": ("max_attempts", "maxAttempts", True),
    "calls": ("max_calls", "maxCalls", True),
    "units": ("max_units", "maxUnits", False),
    "usd": ("max_cost_usd", "maxCostUsd", False),
}
# the largest raise of each limit a person may write at once: far above any real run, well within what a float
# counts exactly, so that `calls=+1e300` is a typo refused, never a run that can no longer be stopped by a budget
RAISE_MAX: dict[str, float] = {"attempts": 10_000, "calls": 1_000_000, "units": 1e12, "usd": 1_000_000}
RAISE_USAGE = "write `calls=+N`, `units=+N`, `usd=+N` or `attempts=+N`, one or more, e.g. `calls=+10 usd=+2`"


class RaiseInvalid(InterlockError):
    """A raise that cannot be applied as written; the message is the reply, and nothing changed."""


class BudgetRaise(Record):
    """One raise of a run's limits, kept in the ledger (SPEC P5): by whom, when, at which stage, and by how much.
    A raise changes limits only: the ledger's totals stay the sum of its charges."""

    by: str
    at: datetime
    stage: str
    amounts: dict[str, float]  # limit word (``calls``, ``usd``...) -> how much it was raised by

    def text(self) -> str:
        """The raise as a person writes it: ``calls=+10 usd=+2``."""
        return " ".join(f"{word}=+{amount:g}" for word, amount in self.amounts.items())


class HeldCall(Record):
    """The call a budget refused, to be made as it was when the budget is raised (SPEC P5). ``detail`` is what
    the call carried: the note of a mission, the answer a decision chooses from, the failure an advisor reads.
    ``limit`` is the word of the limit that refused it (``calls``...), "" when no raise can help."""

    stage: str
    kind: MissionKind
    detail: str = ""
    session_id: str | None = None
    limit: str = ""


def parse_raise(words: Sequence[str]) -> dict[str, float]:
    """``["calls=+10", "usd=+2"]`` -> ``{"calls": 10, "usd": 2}``; anything else raises ``RaiseInvalid``."""
    if not words:
        raise RaiseInvalid(f"a budget raise names what to raise: {RAISE_USAGE}")
    amounts: dict[str, float] = {}
    for word in words:
        key, equals, value = word.partition("=")
        key = key.strip().lower()
        if not equals or key not in LIMITS:
            raise RaiseInvalid(f"{quoted(word, 40)} is not a budget to raise: {RAISE_USAGE}")
        if key in amounts:
            raise RaiseInvalid(f"`{key}` is raised twice; write it once")
        amounts[key] = _amount(key, value.strip())
    return amounts


def _amount(key: str, value: str) -> float:
    """A positive raise; whole for counted limits (calls, attempts)."""
    try:
        amount = float(value)
    except ValueError:
        raise RaiseInvalid(f"{quoted(f'{key}={value}', 30)} is not a number: {RAISE_USAGE}") from None
    if not math.isfinite(amount) or amount <= 0:
        raise RaiseInvalid(f"{quoted(f'{key}={value}', 30)} does not raise anything: a raise is a number above zero")
    if amount > RAISE_MAX[key]:
        raise RaiseInvalid(f"{quoted(f'{key}={value}', 30)} is more than one raise may add: at most {RAISE_MAX[key]:g}")
    if LIMITS[key][2] and not amount.is_integer():
        raise RaiseInvalid(f"{quoted(f'{key}={value}', 30)} is not a whole number: {key} are counted one by one")
    return amount


def unset_limits(policy: Policy, amounts: dict[str, float]) -> list[str]:
    """The raised limits the policy does not set: there is nothing to raise, they are not limited."""
    return [LIMITS[key][1] for key in amounts if getattr(policy, LIMITS[key][0]) is None]


def overflowing_limits(policy: Policy, amounts: dict[str, float]) -> list[str]:
    """The raised limits that would pass what a number holds (infinity): refused, never an unlimited run."""
    return [
        LIMITS[key][1] for key, amount in amounts.items() if not math.isfinite(getattr(policy, LIMITS[key][0]) + amount)
    ]


def raised_policy(policy: Policy, amounts: dict[str, float]) -> Policy:
    """The policy with each named limit raised by its amount."""
    changes: dict[str, float] = {}
    for key, amount in amounts.items():
        field, _, whole = LIMITS[key]
        new = getattr(policy, field) + amount
        changes[field] = int(new) if whole else new
    return policy.model_copy(update=changes)


def suggested_raise(policy: Policy, limit: str) -> str:
    """The raise a decision file offers: the refused limit doubled (its own size again), e.g. ``calls=+6``."""
    field, _, whole = LIMITS[limit]
    current = getattr(policy, field) or 1
    return f"{limit}=+{int(current) if whole else round(current, 2):g}"


def cut_detail(text: str) -> str:
    """A held call's text, bounded like the rest of the record (SPEC J5)."""
    raw = text.encode("utf-8")
    return text if len(raw) <= HELD_BYTES else raw[:HELD_BYTES].decode("utf-8", "ignore")
