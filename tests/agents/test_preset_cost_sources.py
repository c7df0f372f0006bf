# ruff: noqa: F811 - the fixtures are imported, and pytest passes them by name
"""Where a preset's cost came from (issue 28, part 7; SPEC W3): Claude Code's own report, or unknown when it gives
none; Codex's tokens times the shipped price table, with the table's date."""

from __future__ import annotations

import json
from pathlib import Path

from app.agents.presets import ClaudeAgent, CodexAgent
from app.agents.prices import shipped_prices
from app.engine.cost_source import CostSource
from tests.agents.test_presets import fake_bin, make_call, record_file, workdir  # noqa: F401 - the fixtures


def test_claudes_reported_cost_is_its_report_and_none_is_unknown(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC W3
    reported = ClaudeAgent().run(make_call(workdir, record_file))
    assert reported.usage.cost_usd == 0.0375 and reported.usage.source is CostSource.REPORTED
    silent = json.dumps({"type": "result", "result": "Done.\nVERDICT: PASS", "session_id": "s-1", "usage": {}})
    unknown = ClaudeAgent().run(make_call(workdir, record_file, env={"FAKE_STDOUT": silent}))
    assert unknown.usage.cost_usd is None and unknown.usage.source is CostSource.UNKNOWN


def test_codex_cost_is_the_shipped_tables_with_its_date(fake_bin: Path, workdir: Path, record_file: Path) -> None:
    # SPEC W3: an estimate from the shipped table names its date
    outcome = CodexAgent().run(make_call(workdir, record_file, model="o4-mini"))
    assert outcome.usage.source is CostSource.PRICE_TABLE and outcome.usage.prices_as_of == shipped_prices().as_of
