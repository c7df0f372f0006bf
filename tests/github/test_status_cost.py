# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""The status comment shows the worst case of any run of the run's graph (SPEC G7).

The small graph of the GitHub tests is a build → review loop, three visits each. Without an advisor each visit
takes at most a mission and its re-ask: 2 x 3 x 2 = 12 missions, calls and units; with one, each visit may also
take the advisor's call: 18 calls and units.
"""

from __future__ import annotations

from app.engine.graph.validate import parse_graph
from app.github.status import render_status
from tests.engine.driver import Driver
from tests.github.test_flows import SMALL_GRAPH, World, world  # noqa: F401 - fixture

WITHOUT_ADVISOR = "12 missions, 12 model calls, 12 units"


def test_the_status_comment_shows_the_worst_case_for_the_runs_advisor() -> None:
    # SPEC G7: the figure follows the run: an advisor's calls count only when the run has one
    graph = parse_graph(SMALL_GRAPH)
    plain = render_status(Driver(graph).run, graph)
    advised = render_status(Driver(graph, advisor=True).run, graph)
    assert f"· **worst case** {WITHOUT_ADVISOR}\n" in plain
    assert "· **worst case** 12 missions, 18 model calls, 18 units\n" in advised


def test_the_status_comment_on_github_shows_the_worst_case(world: World) -> None:
    # SPEC G7
    _, issue = world.label()
    run = world.run(issue)
    body = str(world.fake.comments[int(run.links["status_comment"])]["body"])
    assert f"**worst case** {WITHOUT_ADVISOR}" in body
