"""A person's choice after a visit was refused at an edge (issue 28, part 1; SPEC B2, E2, E3).

The run stands at the stage whose visit the budget refused, which did not run; the decision names it and the
edge that led there, and offers both routes: pass the refused stage with a verdict (``route VERDICT``), or route
from the edge's source again (``route VERDICT --at SOURCE``).
"""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine import rules
from app.engine.decision import refusal_text
from app.engine.effects import DispatchMission, Escalate
from app.engine.errors import EventRejected
from app.engine.record import Status
from app.engine.rules import Rules
from tests.engine.driver import Driver
from tests.helpers import doc, edge, graph, node

GRAPH = graph(
    [node("implement", maxVisits=9), node("review", "review", maxVisits=2)],
    [
        edge("implement", "PASS", "review"),
        edge("implement", "BLOCKED", "__end__"),
        edge("review", "PASS", "__end__"),
        edge("review", "FAIL", "implement"),
    ],
    entry="implement",
)


def refused() -> Driver:
    """implement PASSes, review always FAILs: review's third visit is refused on the edge implement → review."""
    d = Driver(GRAPH)
    while d.run.status is Status.RUNNING:
        assert d.run.waiting is not None
        d.finish("done\nVERDICT: PASS" if d.run.waiting.stage == "implement" else "no\nVERDICT: FAIL")
    return d


def test_the_decision_says_where_the_run_stands_and_which_edge_was_refused() -> None:
    # SPEC E2: the file names the stage the run stands at, that it did not run, and the refused edge's source
    d = refused()
    assert (d.run.status, d.run.stage, d.run.mission_count) == (Status.ESCALATED, "review", 5)
    said = (
        "The run stands at `review`, which did not run: its visit 3 was refused on the edge `implement` → `review` "
        "(PASS). `route VERDICT` passes `review` as if it had answered VERDICT; `route VERDICT --at implement` "
        "routes from `implement` again."
    )
    decision = d.of(Escalate)[0].decision
    assert said in decision and refusal_text(d.run) == said
    assert "| route PASS | `interlock route run-1 PASS` | `/interlock route PASS` | pass `review` as if" in decision
    assert "| route BLOCKED at implement | `interlock route run-1 BLOCKED --at implement` |" in decision
    assert d.run.decisions[-1].options == [
        "resume",
        "resume at implement",
        "route PASS",
        "route FAIL",
        "route PASS at implement",
        "route BLOCKED at implement",
        "deliver",
        "abandon",
    ]


def test_route_passes_the_refused_stage_with_the_verdict_and_pays_no_mission() -> None:
    # SPEC E3: "accept the review" is `route PASS`: review's PASS edge, no mission dispatched
    d = refused()
    effects = d.apply(ev.RouteChosen, verdict="pass", by="ann")
    assert d.run.status is Status.AWAITING_MERGE and not [e for e in effects if isinstance(e, DispatchMission)]
    assert (d.run.path[-1].stage, d.run.path[-1].verdict, d.run.path[-1].to) == ("review", "PASS", "__end__")
    assert d.run.mission_count == 5 and d.run.decisions[-1].taken == "route PASS"


def test_route_at_the_edges_source_routes_from_it_with_budgets_re_armed() -> None:
    # SPEC E3, B4: `--at implement` is implement's verdict again: review runs, its visits re-armed
    d = refused()
    d.apply(ev.RouteChosen, verdict="PASS", stage="implement", by="ann")
    assert d.dispatched().stage == "review" and d.run.visits == {"review": 1}
    assert (d.run.path[-1].stage, d.run.path[-1].to, d.run.path[-1].by) == ("implement", "review", "ann")
    assert d.run.decisions[-1].taken == "route PASS at implement"
    d = refused()
    d.apply(ev.RouteChosen, verdict="BLOCKED", stage="implement", by="ann")
    assert d.run.status is Status.AWAITING_MERGE and d.run.path[-1].verdict == "BLOCKED"


@pytest.mark.parametrize(
    ("verdict", "stage", "said"),
    [
        ("BLOCKED", None, "stage 'review' has no edge for 'BLOCKED'; its labels: PASS, FAIL; from 'implement', whose "
         "edge was refused (`--at implement`; in a comment `at implement`): PASS, BLOCKED"),
        ("FAIL", "implement", "stage 'implement' has no edge for 'FAIL'"),
        ("PASS", "nowhere", "a route starts at 'review', where the run stands, not 'nowhere'; its labels: PASS"),
    ],
)  # fmt: skip
def test_a_route_no_stage_can_take_is_refused_with_the_choices_and_changes_nothing(
    verdict: str, stage: str | None, said: str
) -> None:
    # SPEC E3: a verdict that is no label of the stage named is refused, naming what each stage can route
    d = refused()
    before = d.run
    with pytest.raises(EventRejected) as refusal:
        d.apply(ev.RouteChosen, verdict=verdict, stage=stage, by="ann")
    assert said in str(refusal.value) and d.run is before


def test_at_is_refused_where_no_visit_was_refused_at_an_edge() -> None:
    # SPEC E3: without a refused edge a route starts where the run stands, only
    d = Driver(GRAPH)
    d.apply(ev.StopRequested)
    d.finish("done\nVERDICT: PASS")
    assert d.run.status is Status.INTERRUPTED and refusal_text(d.run) == ""
    with pytest.raises(EventRejected, match="a route starts at 'review', where the run stands, not 'implement'"):
        d.apply(ev.RouteChosen, verdict="PASS", stage="implement")


def test_a_run_under_rules_3_keeps_the_options_it_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC J6: an escalation made under rules 3 replays to the decision it recorded, without the new routes
    monkeypatch.setattr(rules, "CURRENT", Rules(3))
    d = refused()
    assert d.run.status is Status.ESCALATED and refusal_text(d.run) == "" and d.run.rules == 3
    assert d.run.decisions[-1].options == ["resume", "resume at implement", "route PASS", "route FAIL", "deliver",
                                           "abandon"]  # fmt: skip


def test_the_readme_says_what_each_route_does_after_a_refused_visit() -> None:
    # the tests above (and tests/local/test_route_refused_cli.py, tests/github/test_route_refused_flow.py) are
    # the behaviour; these are the words

    text = " ".join(doc("local/running.md", "graphs/engine.md").split())
    for words in (
        "`route VERDICT` passes the refused stage as if it had answered VERDICT (`route PASS` accepts the review",
        "`route VERDICT --at implement` (`/interlock route VERDICT at implement` on GitHub) routes from the edge's",
        "A verdict that is no label of the stage named is refused with every route listed, and nothing changes",
        "| `interlock route RUN VERDICT [--at STAGE]` |",
    ):
        assert words in text, words


def test_at_is_refused_on_a_stop_whose_decision_offered_no_route_at(monkeypatch: pytest.MonkeyPatch) -> None:
    # a stop recorded under rules 3 offered no `--at`; a route continued under rules 4 may not take one (review)
    monkeypatch.setattr(rules, "CURRENT", Rules(3))
    d = refused()
    monkeypatch.undo()
    with pytest.raises(EventRejected, match="a route starts at 'review', where the run stands, not 'implement'"):
        d.apply(ev.RouteChosen, verdict="PASS", stage="implement")


GATED = graph(
    [node("implement", maxVisits=9), node("review", "review", maxVisits=2, humanGate=True)],
    [
        edge("implement", "PASS", "review"),
        edge("review", "PASS", "__end__"),
        edge("review", "FAIL", "implement"),
    ],
    entry="implement",
)


def refused_at_a_gate() -> Driver:
    """As ``refused``, with review behind a human gate whose every approval comes back FAIL from the review."""
    d = Driver(GATED, by="rita", separate_duties=True)
    while d.run.status in (Status.RUNNING, Status.GATE_WAIT):
        if d.run.status is Status.GATE_WAIT:
            d.apply(ev.GateApproved, by="gail")
            continue
        assert d.run.waiting is not None
        d.finish("done\nVERDICT: PASS" if d.run.waiting.stage == "implement" else "no\nVERDICT: FAIL")
    return d


def test_route_past_a_refused_stage_with_a_human_gate_opens_its_gate() -> None:
    # SPEC H1, H6, E3 (issue 28): `route PASS` answers review as its agent would; review is gated, so its gate
    # opens (a gatekeeper approves it), rather than the route passing the gate that the stage's own answer could not
    d = refused_at_a_gate()
    assert (d.run.status, d.run.stage) == (Status.ESCALATED, "review")
    d.apply(ev.RouteChosen, verdict="PASS", by="rita")  # the requester may route; the gate is not hers to pass
    assert d.run.status is Status.GATE_WAIT and d.run.gate is not None
    assert (d.run.gate.stage, d.run.gate.verdict) == ("review", "PASS")
    with pytest.raises(EventRejected, match="duties are separated"):
        d.apply(ev.GateApproved, by="rita")
    d.apply(ev.GateApproved, by="gail")
    assert d.run.status is Status.AWAITING_MERGE


def test_a_route_from_an_open_gate_still_passes_it() -> None:
    # SPEC E3, H6: at the gate itself the route is the gatekeeper's choice, as before: it follows the edge
    d = refused_at_a_gate()
    d.apply(ev.RouteChosen, verdict="PASS", by="rita")
    d.apply(ev.RouteChosen, verdict="PASS", by="gail")
    assert d.run.status is Status.AWAITING_MERGE


def test_under_rules_4_the_route_followed_the_edge_as_recorded() -> None:
    # SPEC J6: a route made under rules 4 replays as it was made: past the gate
    d = refused_at_a_gate()
    d.rules = Rules(4)
    d.apply(ev.RouteChosen, verdict="PASS", by="ann")
    assert d.run.status is Status.AWAITING_MERGE


def test_the_decision_says_the_route_waits_for_the_gate() -> None:
    # SPEC E2, H1: the option's meaning says the gate comes first, so nobody expects the route to end the run
    d = refused_at_a_gate()
    decision = d.of(Escalate)[-1].decision
    assert (
        "pass `review` as if it had answered `PASS`: follow its edge to `__end__`, once a gatekeeper approves "
        in decision
    )
