"""Issue 14 attacked locally as a hostile agent would: what it reports spending reaches the ledger, the metrics and
the traces, so a figure that is negative or not a number must never get there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agents.base import read_usage
from app.engine.cost_source import CostSource
from app.engine.record import Usage


@pytest.mark.parametrize(
    "reported",
    [{"cost_usd": -5}, {"cost_usd": "nan"}, {"cost_usd": "inf"}, {"cost_usd": 1e309}, {"input_tokens": -100},
     {"output_tokens": -1}, {"calls": -3}],
)  # fmt: skip
def test_a_negative_or_infinite_usage_figure_is_ignored(tmp_path: Path, reported: dict[str, object]) -> None:
    # SPEC P3: a negative cost would lower what the budget charges and run a Prometheus counter backwards; NaN
    # is saved as null and leaves a record no one can load. Read like the mission records on GitHub are.
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"calls": 1, "input_tokens": 10, "cost_usd": 0.5, **reported}))
    usage, _, _, problem = read_usage(path)
    # SPEC W3: the report ignored, nothing reported: its $0 is said to be none reported (issue 28)
    ignored = Usage(source=CostSource.NOT_REPORTED)
    assert usage == ignored and problem.startswith("usage file ignored: ValueError: "), (usage, problem)
