# ruff: noqa: F811 - `site` is the imported fixture, which pytest passes by name
"""The board shows the selected run's worst case (SPEC G7); the figure is explained in
tests/github/test_status_cost.py."""

from __future__ import annotations

from tests.github.test_status_cost import WITHOUT_ADVISOR
from tests.webhooks.test_board import Site, site  # noqa: F401 - fixture


def test_the_board_shows_the_selected_runs_worst_case(site: Site) -> None:
    # SPEC G7
    site.sign_in("alice")
    shown = site.client.get("/board", params={"run": "octo/app:issue-1"}).text
    assert f'<p class="worst">Worst case of any run: {WITHOUT_ADVISOR}</p>' in shown
    assert 'class="worst"' not in site.client.get("/board").text  # no run selected, no figure
