"""Where a cost came from (issue 28, part 7; SPEC W3, P3): so that ``interlock money`` can say, per ledger line,
whether a figure is an estimate from the shipped price table (and of which date), from the repository's
``prices:``, the agent's own report, or unknown — and a reader never takes an unknown for $0.

Its own module, free of the rest of the engine: the agents (``app/agents/prices.py``, ``base.py``, ``presets.py``)
set it on the usage they report, the ledger counts it (``app/engine/budget.py``), the reports name it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, assert_never


class CostSource(StrEnum):
    PRICE_TABLE = "price_table"  # tokens times the price table Interlock ships: an estimate, dated
    CONFIGURED = "configured"  # tokens times the repository's (or local configuration's) `prices:`: an estimate
    REPORTED = "reported"  # the agent's own report of what it cost (Claude Code's result, a usage file's cost_usd)
    UNKNOWN = "unknown"  # no price and no report: a server of your own not priced, a model no table prices
    NOT_REPORTED = "not_reported"  # no usage file, or one without a cost: counted as $0, which nobody measured


def describe(source: CostSource, as_of: str = "") -> str:
    """What ``interlock money`` prints for ``source``; ``as_of`` is the price table's date."""
    match source:
        case CostSource.PRICE_TABLE:
            return f"price table of {as_of or 'unknown date'} (estimate)"
        case CostSource.CONFIGURED:
            return "prices: of the configuration (estimate)"
        case CostSource.REPORTED:
            return "agent's report"
        case CostSource.UNKNOWN:
            return "unknown (no price)"
        case CostSource.NOT_REPORTED:
            return "none reported (counted as $0)"
        case _:
            assert_never(source)


def merged_sources(lines: list[dict[str, Any]]) -> dict[str, int]:
    """The sources of several ledger lines (as their JSON has them) counted together: the total's."""
    merged: dict[str, int] = {}
    for line in lines:
        for source, count in line.get("sources", {}).items():
            merged[str(source)] = merged.get(str(source), 0) + count
    return merged


def sources_text(sources: dict[str, int], as_of: str = "") -> str:
    """A ledger line's sources as ``interlock money`` prints them, in the order of ``CostSource``; a line with none
    recorded (no call, a check, or a record written before sources were kept) says so."""
    named = [(CostSource(source), count) for source, count in sources.items() if source in set(CostSource)]
    if not named:
        return "not recorded"
    ordered = sorted(named, key=lambda item: list(CostSource).index(item[0]))
    return "; ".join(f"{count}× {describe(source, as_of)}" for source, count in ordered)
