"""``owed_effects(run, graph)``: what a saved transition still owes (ARCHITECTURE "app/engine").

The property: every effect a transition emits can be said again from the record it saved — so a shell that
saved the record and then failed can carry the effect out on redelivery, from the record alone. The only
exceptions are words the record does not keep (who merged or abandoned a run), and the one-off note of a
mission's prompt other than a re-ask's (the job reads the order stored with the transition). The random walk
also goes through re-asks, whose answers the context does not keep: a question asked there is said again
from the questions the record keeps.
"""

from __future__ import annotations

from dataclasses import astuple
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine import events as ev
from app.engine.effects import (
    AskAdvisor,
    AskDecision,
    DispatchMission,
    Effect,
    EmitEvent,
    Escalate,
    Finish,
    PostMessage,
    ReadyPullRequest,
)
from app.engine.errors import InterlockError
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.owed import EVENTS_SENT, owed_effects
from app.engine.record import MissionKind, MissionStatus, Run, Status
from app.engine.step import step
from tests.engine.driver import Driver
from tests.helpers import edge, graph, node

T0 = datetime(2026, 11, 30, tzinfo=UTC)
GRAPH = parse_graph(
    graph(
        [
            node("plan", "planning", humanGate=True, maxVisits=2),
            node("build", "coding", event="built", maxVisits=3),
            node("test", "testing", check="pytest -q", maxVisits=3),
            node("review", "review", event="reviewed", maxVisits=3),
            node("judge", "review", decide=True, maxVisits=2),
        ],
        [
            edge("plan", "PASS", "build"),
            edge("build", "PASS", "test"),
            edge("test", "PASS", "review"),
            edge("test", "FAIL", "build"),
            edge("review", "PASS", "judge"),
            edge("review", "FAIL", "build"),
            edge("judge", "SHIP", "__end__"),
            edge("judge", "REWORK", "build"),
        ],
        entry="plan",
    )
)
ANSWERS = [
    "VERDICT: PASS",
    "VERDICT: FAIL",
    "",
    "VERDICT: WHAT",
    "Which database?\nVERDICT: NEEDS_INPUT",
    "VERDICT: NEEDS_UPSTREAM\n```request\nocto/lib\nAdd retries\nIt flakes.\n```",
]


def signature(effect: Effect) -> tuple[Any, ...]:
    """What an effect says, for comparison: a mission's prompt by its parts the record keeps."""
    if isinstance(effect, DispatchMission):
        parts = effect.prompt
        note = parts.note if effect.kind is MissionKind.REASK else ""
        fields = (effect.seq, effect.stage, effect.capability, effect.kind, effect.key, effect.check, effect.session_id)
        return ("dispatch", *fields, parts.visit, parts.contract, parts.reserved, parts.extra_prompt, note)
    if isinstance(effect, AskDecision | AskAdvisor | PostMessage | Escalate | EmitEvent | Finish):
        return (type(effect).__name__, *astuple(effect))
    return (type(effect).__name__, *astuple(effect))


def said_again(effect: Effect) -> bool:
    """Whether the record keeps the words of ``effect``: not who merged or abandoned a run."""
    return not (isinstance(effect, PostMessage) and effect.kind in ("done", "cancelled"))


def assert_owed(run: Run, graph_: Graph, emitted: list[Effect]) -> None:
    owed = [signature(effect) for effect in owed_effects(run, graph_)]
    for effect in emitted:
        if said_again(effect):
            assert signature(effect) in owed, (run.status, effect, owed)


def events_for(run: Run, draw: Any, at: datetime, key: str) -> ev.Event:
    """An event that fits the run's status, mostly; now and then one that does not."""
    waiting = run.waiting
    common: dict[str, Any] = {"key": key, "at": at}
    if run.status is Status.RUNNING and waiting is not None:
        if waiting.kind is MissionKind.DECIDE:
            return ev.DecisionReturned(
                **common, seq=waiting.seq, answer=draw(st.sampled_from(["SHIP", "REWORK", "no"]))
            )
        if waiting.kind is MissionKind.ADVISOR:
            return ev.AdviceReturned(**common, seq=waiting.seq, advice=draw(st.sampled_from(["retry", "escalate"])))
        status = draw(st.sampled_from([MissionStatus.DONE] * 5 + [MissionStatus.FAILED, MissionStatus.SKIPPED]))
        answer, code = draw(st.sampled_from(ANSWERS)), draw(st.sampled_from([0, 1]))
        return ev.MissionFinished(**common, seq=waiting.seq, status=status, answer=answer, exit_code=code, commits=1)
    fitting = {
        Status.GATE_WAIT: [ev.GateApproved(**common, by="carol"), ev.GateAmended(**common, note="More tests.")],
        Status.AWAITING_INPUT: [ev.InputAnswered(**common, text="Postgres.")],
        Status.AWAITING_UPSTREAM: [
            ev.UpstreamChanged(**common, state="done"),
            ev.UpstreamChanged(**common, state="rejected"),
        ],
        Status.AWAITING_MERGE: [ev.Merged(**common, by="carol"), ev.Closed(**common)],
    }.get(run.status, [ev.Resume(**common), ev.RouteChosen(**common, verdict="PASS"), ev.Deliver(**common)])
    anytime = [ev.StopRequested(**common), ev.Abandon(**common, by="alice"), ev.Resume(**common)]
    return draw(st.sampled_from(fitting * 4 + anytime))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans(), st.booleans())
def test_every_effect_a_transition_emits_is_owed_by_the_record_it_saved(
    data: Any, autopilot: bool, advisor: bool
) -> None:
    start = ev.Start(
        key="start",
        at=T0,
        run_id="run-1",
        title="Add a greeting",
        autopilot=autopilot,
        advisor=advisor,
        upstream=("octo/*",),
    )
    run, effects = step(None, start, GRAPH)
    assert_owed(run, GRAPH, effects)
    for number in range(30):
        event = events_for(run, data.draw, T0 + timedelta(minutes=number + 1), f"k{number}")
        try:
            run, effects = step(run, event, GRAPH)
        except InterlockError:
            continue
        assert_owed(run, GRAPH, effects)
        if run.status in (Status.DONE, Status.CANCELLED):
            break


def test_the_end_owes_the_ready_pull_request_and_the_event_until_the_event_is_recorded_sent() -> None:
    # SPEC GH6: a redelivered end transition makes the pull request ready and sends the graph event
    driver = Driver(graph([node("review", "review", event="reviewed")], [edge("review", "PASS", "__end__")], "review"))
    emitted = driver.finish("VERDICT: PASS")
    owed = owed_effects(driver.run, driver.graph)
    assert [type(e) for e in owed] == [EmitEvent, ReadyPullRequest, PostMessage] == [type(e) for e in emitted]
    sent = driver.run.but(links={EVENTS_SENT: str(driver.run.hop_count)})
    assert [type(e) for e in owed_effects(sent, driver.graph)] == [ReadyPullRequest, PostMessage]


def test_a_finished_run_owes_its_labels_only() -> None:
    driver = Driver(graph([node("review", "review", event="reviewed")], [edge("review", "PASS", "__end__")], "review"))
    driver.finish("VERDICT: PASS")
    driver.apply(ev.Merged, by="carol")
    assert [signature(e) for e in owed_effects(driver.run, driver.graph)] == [("Finish", Status.DONE)]


def test_an_escalation_owes_its_decision_file() -> None:
    # SPEC E2: the decision file can be posted again from the record, word for word
    driver = Driver(graph([node("build")], [edge("build", "PASS", "__end__")], "build"))
    emitted = driver.finish("segfault", status=MissionStatus.CRASHED)
    escalate = next(e for e in emitted if isinstance(e, Escalate))
    assert owed_effects(driver.run, driver.graph) == [escalate]
