# ruff: noqa: F811 - `server` is the imported fixture, which pytest passes by name
"""Where each cost came from (issue 28, part 7; SPEC W3, P3): `interlock money` says, per ledger line and in its
JSON, whether a cost is an estimate from the shipped price table (with its date), from the repository's `prices:`,
the agent's own report, or unknown (no price: a server of your own, a model no table prices), so that an unknown
is never read as $0."""

from __future__ import annotations

import json
from pathlib import Path

from app.agents.base import read_usage
from app.agents.prices import ModelPrice, price_table, shipped_prices
from app.engine.cost_source import CostSource, describe
from app.engine.record import Usage
from app.local.reports import money_report
from tests.engine.driver import Driver, loop_graph
from tests.helpers import doc
from tests.local.test_costs import run_with, server  # noqa: F401 - the fixture


def test_an_estimate_from_the_shipped_table_names_the_table_and_its_date() -> None:
    # SPEC W3: an estimate is labelled as one, with the date of the prices it used
    usage = price_table().estimate(Usage(calls=1, input_tokens=1000, output_tokens=100), "gpt-4o-mini")
    assert usage.source is CostSource.PRICE_TABLE and usage.prices_as_of == shipped_prices().as_of
    d = Driver(loop_graph())
    d.finish("done", usage=usage)
    text = money_report(d.run)
    assert f"price table of {shipped_prices().as_of} (estimate)" in text


def test_an_estimate_from_the_repositorys_prices_says_so(tmp_path: Path, server: str) -> None:
    # SPEC W3: a loopback server priced by the configuration alone (issue 17)
    _, run = run_with(tmp_path, f"openai:gpt-4o-mini@{server}", prices={"gpt-4o-mini": ModelPrice(input=1, output=2)})
    assert {m.usage.source for m in run.missions} == {CostSource.CONFIGURED}
    text = money_report(run)
    assert "2× prices: of the configuration (estimate)" in text
    data = run.ledger.json_data()["by_category"]["deliver"]
    assert data["sources"] == {"configured": 2}


def test_a_model_of_your_own_without_a_price_is_unknown_never_zero(tmp_path: Path, server: str) -> None:
    # SPEC W3, P3: a self-hosted model the configuration does not price: unknown, never $0
    _, run = run_with(tmp_path, f"openai:gpt-4o-mini@{server}")
    assert {m.usage.source for m in run.missions} == {CostSource.UNKNOWN}
    text = money_report(run)
    assert "2× unknown (no price)" in text and "$0" not in text


def test_the_agents_own_report_of_its_cost_is_named_as_such(tmp_path: Path) -> None:
    # SPEC W3: a usage file's cost is the agent's word; null is its unknown; no cost at all is said too
    path = tmp_path / "usage.json"
    sources = []
    for cost in ('"cost_usd": 0.25', '"cost_usd": null', '"input_tokens": 5'):
        path.write_text("{" + cost + "}")
        sources.append(read_usage(path)[0].source)
    assert sources == [CostSource.REPORTED, CostSource.UNKNOWN, CostSource.NOT_REPORTED]
    d = Driver(loop_graph())
    d.finish("done", usage=Usage(calls=1, cost_usd=0.25, source=CostSource.REPORTED))
    d.finish("fine\nVERDICT: FAIL", usage=Usage(calls=1, source=CostSource.NOT_REPORTED))
    text = money_report(d.run)
    assert "agent's report" in text and "none reported (counted as $0)" in text


def test_the_money_json_carries_each_lines_sources_and_the_tables_date() -> None:
    d = Driver(loop_graph())
    d.finish("done", usage=price_table().estimate(Usage(calls=1, input_tokens=10), "gpt-4o-mini"))
    line = json.loads(json.dumps(d.run.ledger.json_data()))["by_category"]["deliver"]
    assert line["sources"] == {"price_table": 1} and line["prices_as_of"] == shipped_prices().as_of


def test_a_record_written_before_sources_were_kept_reads_and_shows_none() -> None:
    # SPEC J6: an older record (no source) loads unchanged, and its journal form has no new key
    usage = Usage(calls=1, cost_usd=0.5)
    assert "source" not in usage.json_data() and "prices_as_of" not in usage.json_data()
    d = Driver(loop_graph())
    d.finish("done", usage=usage)
    assert "sources" not in d.run.ledger.json_data()["by_category"]["deliver"]
    assert "not recorded" in money_report(d.run)


def test_the_readme_says_where_each_cost_came_from() -> None:
    text = " ".join(doc("local/agents.md").split())
    for source in CostSource:  # every source the column can name is explained, in the words it prints
        assert describe(source, "2026-12-01") in text, source
        assert f"`{source.value}`" in text, source
    assert "`interlock money RUN` has a `cost_source` column" in text
