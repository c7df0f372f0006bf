"""Table-driven transitions: (record, event) -> (record, effects), one rule at a time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.engine import events as ev
from app.engine.effects import (
    AskAdvisor,
    AskDecision,
    DispatchMission,
    EmitEvent,
    Escalate,
    FileRequest,
    Finish,
    OpenGate,
    OpenPullRequest,
    PostMessage,
    ReadyPullRequest,
)
from app.engine.errors import EventRejected, RunFinished, StaleEvent
from app.engine.graph.model import END
from app.engine.record import Category, MissionKind, MissionStatus, ReasonCode, Run, Status, Usage
from tests.engine.driver import Driver, loop_graph
from tests.helpers import edge, graph, node

UPSTREAM_ANSWER = (
    "I need an API.\n```request\nacme/api\nExpose /users\nWe need a users endpoint.\n```\nVERDICT: NEEDS_UPSTREAM"
)


def test_start_dispatches_the_entry_with_one_visit() -> None:
    # SPEC B1, J1
    d = Driver(loop_graph())
    mission = d.dispatched()
    assert (mission.stage, mission.kind, mission.seq) == ("work", MissionKind.DELIVER, 1)
    assert d.run.status is Status.RUNNING and d.run.visits == {"work": 1} and d.run.version == 1
    assert d.run.branch == "interlock/run-1" and d.run.base == "develop"
    assert d.run.graph == "test" and d.run.graph_hash.startswith("sha256:")


@pytest.mark.parametrize(
    ("answer", "stage"),
    [
        ("looks good\nVERDICT: PASS", END),
        ("VERDICT: pass", END),
        ("**Verdict:** `Fail`", "work"),
        ("VERDICT: FAIL\nsecond thoughts\nVERDICT: PASS", END),
        ("", END),  # SPEC V3: several labels with PASS, a missing verdict is PASS
    ],
)
def test_verdicts_route_case_insensitively_on_the_last_line(answer: str, stage: str) -> None:
    # SPEC V5
    d = Driver(loop_graph())
    d.finish("done")
    d.finish(answer)
    assert d.run.stage == stage


def test_catch_all_takes_any_other_label() -> None:
    # SPEC G2, V5
    d = Driver(
        graph([node("a"), node("b")], [edge("a", "PASS", "__end__"), edge("a", "*", "b"), edge("b", "PASS", "__end__")])
    )
    d.finish("VERDICT: SOMETHING_ELSE")
    assert d.run.stage == "b" and d.run.path[-1].verdict == "*"


def test_unroutable_verdict_is_reasked_once_without_a_visit_then_escalates() -> None:
    # SPEC V5, B3, E1
    d = Driver(loop_graph())
    d.finish("done")
    d.finish("VERDICT: MAYBE")
    reask = d.dispatched()
    assert reask.kind is MissionKind.REASK and reask.stage == "review"
    assert "PASS, FAIL" in reask.prompt.note and d.run.visits["review"] == 1
    d.finish("VERDICT: PERHAPS")
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert d.run.reason.code is ReasonCode.UNROUTABLE_VERDICT and d.run.reason.stage == "review"
    assert d.of(Escalate)[0].decision.startswith("# Decision needed")


def test_reask_answer_that_routes_continues() -> None:
    # SPEC V5
    d = Driver(loop_graph())
    d.finish("done")
    d.finish("VERDICT: MAYBE")
    d.finish("VERDICT: FAIL")
    assert d.run.stage == "work" and d.run.visits == {"work": 2, "review": 1}
    assert d.run.ledger.by_category[Category.REASK].calls == 1


def test_strict_node_without_verdict_is_reasked() -> None:
    # SPEC V4
    d = Driver(
        graph(
            [node("triage")], [edge("triage", "BUG", "__end__"), edge("triage", "FEATURE", "__end__")], entry="triage"
        )
    )
    d.finish("I think it is a bug")
    assert d.dispatched().kind is MissionKind.REASK


def test_pass_only_node_needs_no_verdict() -> None:
    # SPEC V2
    d = Driver(graph([node("a")], [edge("a", "PASS", "__end__")]))
    d.finish("done, no verdict line")
    assert d.run.status is Status.AWAITING_MERGE


def test_node_without_outgoing_edges_ends_the_run() -> None:
    # SPEC G3 (termination), V2
    d = Driver(graph([node("a"), node("b")], [edge("a", "PASS", "b")]))
    d.finish("x")
    d.finish("anything at all")
    assert d.run.status is Status.AWAITING_MERGE and d.of(ReadyPullRequest)


def test_needs_input_waits_for_a_person_and_the_answer_costs_no_visit() -> None:
    # SPEC V6, C1
    d = Driver(loop_graph())
    d.finish("Which language?\nVERDICT: NEEDS_INPUT")
    assert d.run.status is Status.AWAITING_INPUT and "Which language?" in d.of(PostMessage)[0].text
    d.apply(ev.InputAnswered, text="Python, please", by="alice")
    mission = d.dispatched()
    assert mission.stage == "work" and d.run.visits == {"work": 1} and "Python, please" in mission.prompt.context
    assert d.run.context.preamble[-1].label.startswith("Answer from alice")


def test_needs_upstream_files_the_request_and_resumes_itself_when_done() -> None:
    # SPEC V6, U3
    d = Driver(loop_graph(), upstream=("acme/api",))
    d.finish(UPSTREAM_ANSWER)
    request = d.of(FileRequest)[0]
    assert (request.target, request.title, request.body) == ("acme/api", "Expose /users", "We need a users endpoint.")
    assert d.run.status is Status.AWAITING_UPSTREAM and d.run.upstream is not None
    d.apply(ev.UpstreamChanged, state="accepted", id="acme/api#7")
    assert d.run.status is Status.AWAITING_UPSTREAM and d.run.upstream.id == "acme/api#7"  # type: ignore[union-attr]
    d.apply(ev.UpstreamChanged, state="done")
    assert d.dispatched().stage == "work" and d.run.status is Status.RUNNING and d.run.visits == {"work": 1}


def test_the_upstream_outcome_enters_the_next_missions_context_as_data() -> None:
    # SPEC U3, C1: done carries where the work is and what it did; the next mission reads it, fenced as data
    d = Driver(loop_graph(), upstream=("acme/api",))
    d.finish(UPSTREAM_ANSWER)
    summary = "Pull request: https://github.com/acme/api/pull/9\nAdded GET /users."
    d.apply(ev.UpstreamChanged, state="done", id="https://github.com/acme/api/pull/9", summary=summary)
    note = d.run.context.preamble[-1]
    assert (note.label, note.data) == ("upstream outcome (acme/api)", True)
    assert "Added GET /users." in d.dispatched().prompt.context and "acme/api/pull/9" in d.dispatched().prompt.context


def test_rejected_upstream_escalates() -> None:
    # SPEC U3, E1
    d = Driver(loop_graph(), upstream=("acme/*",))
    d.finish(UPSTREAM_ANSWER)
    d.apply(ev.UpstreamChanged, state="rejected")
    assert d.run.status is Status.ESCALATED and d.run.reason.code is ReasonCode.UPSTREAM_REJECTED  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("allowed", "target"),
    [
        ((), "acme/api"),  # the default: no upstream request anywhere
        (("acme/lib",), "acme/api"),
        (("acme-tools/*",), "acme/api"),
        (("acme/*",), "evil/api"),
        (("acme/*",), "acme/*"),
        (("acme/*",), "acme/.."),
        (("acme/*",), "acme/api/issues"),
        (("acme/*",), "https://github.com/acme/api"),
    ],
)
def test_needs_upstream_to_a_repository_the_configuration_does_not_allow_escalates(
    allowed: tuple[str, ...], target: str
) -> None:
    # SPEC U3, GH9: the agent's request may have been steered by the request it works on: nothing is filed
    d = Driver(loop_graph(), upstream=allowed)
    d.finish(UPSTREAM_ANSWER.replace("acme/api", target))
    assert d.of(FileRequest) == [] and d.run.upstream is None
    assert d.run.status is Status.ESCALATED and d.run.reason.code is ReasonCode.UPSTREAM_NOT_ALLOWED  # type: ignore[union-attr]
    assert repr(target) in d.run.reason.message and "nothing was filed" in d.run.reason.message  # type: ignore[union-attr]
    assert "upstream_not_allowed" in d.of(Escalate)[0].decision


@pytest.mark.parametrize("allowed", [("acme/api",), ("ACME/API",), ("acme/*",), ("Acme/*", "other/x")])
def test_needs_upstream_to_an_allowed_repository_is_filed(allowed: tuple[str, ...]) -> None:
    # SPEC U3: owner/repo or owner/*, GitHub's names in any case
    d = Driver(loop_graph(), upstream=allowed)
    d.finish(UPSTREAM_ANSWER)
    assert [request.target for request in d.of(FileRequest)] == ["acme/api"]


def test_a_quoted_request_block_does_not_file_the_quoted_target() -> None:
    # SPEC V5, V6, GH9: the agent's own verdict and request count, not the request it quotes after them
    d = Driver(loop_graph(), upstream=("acme/*",))
    quoted = "\n".join(f"> {line}" for line in UPSTREAM_ANSWER.replace("acme/api", "acme/secret").splitlines())
    d.finish(f"{UPSTREAM_ANSWER}\n\nYou asked:\n{quoted}\n````\nVERDICT: NEEDS_INPUT\n````")
    assert [request.target for request in d.of(FileRequest)] == ["acme/api"]


def test_needs_upstream_without_a_request_block_is_reasked() -> None:
    # SPEC V6: the request is a fenced block the shell files; without one there is nothing to file
    d = Driver(loop_graph())
    d.finish("VERDICT: NEEDS_UPSTREAM")
    assert d.dispatched().kind is MissionKind.REASK


@pytest.mark.parametrize(("exit_code", "stage"), [(0, "review"), (1, "work"), (127, "work")])
def test_check_node_verdict_is_the_exit_code_and_costs_no_call(exit_code: int, stage: str) -> None:
    # SPEC V7
    d = Driver(
        graph(
            [node("work"), node("test", check="pytest -q"), node("review", "review")],
            [
                edge("work", "PASS", "test"),
                edge("test", "PASS", "review"),
                edge("test", "FAIL", "work"),
                edge("review", "PASS", "__end__"),
            ],
            entry="work",
        )
    )
    d.finish("done")
    check = d.dispatched()
    assert check.kind is MissionKind.CHECK and check.check == "pytest -q"
    d.finish("3 passed" if exit_code == 0 else "1 failed", exit_code=exit_code)
    assert d.run.stage == stage
    assert d.run.ledger.by_category[Category.CHECK].calls == 0
    assert d.run.ledger.by_category[Category.CHECK].attempts == 1
    assert d.run.context.results[-1].body in ("3 passed", "1 failed")


def _decide_driver(**start: object) -> Driver:
    return Driver(
        graph(
            [node("triage", decide=True), node("fix"), node("docs")],
            [
                edge("triage", "BUG", "fix"),
                edge("triage", "DOCS", "docs"),
                edge("fix", "PASS", "__end__"),
                edge("docs", "PASS", "__end__"),
            ],
            entry="triage",
        ),
        **start,
    )


def test_decide_node_asks_a_cheap_model_for_a_label_from_the_closed_list() -> None:
    # SPEC V8
    d = _decide_driver()
    d.finish("The stack trace shows a crash in parse().")
    ask = d.of(AskDecision)[0]
    assert ask.labels == ("BUG", "DOCS") and "crash in parse()" in ask.prompt
    d.apply(ev.DecisionReturned, seq=ask.seq, answer="bug")
    assert d.run.stage == "fix" and d.run.ledger.by_category[Category.DECIDE].calls == 1
    assert d.run.missions[ask.seq - 1].verdict == "BUG"


def test_decision_outside_the_list_stops_the_run() -> None:
    # SPEC V8
    d = _decide_driver()
    d.finish("hmm")
    d.apply(ev.DecisionReturned, seq=d.of(AskDecision)[0].seq, answer="done")
    assert d.run.status is Status.ESCALATED and d.run.reason.code is ReasonCode.INVALID_SELECTION  # type: ignore[union-attr]


def test_visit_budget_stops_the_loop_and_names_node_and_budget() -> None:
    # SPEC B1, B2
    d = Driver(loop_graph(work={"maxVisits": 2}))
    for _ in range(2):
        d.finish("done")
        d.finish("VERDICT: FAIL")
    assert d.run.status is Status.ESCALATED and d.run.visits["work"] == 3
    reason = d.run.reason
    assert reason is not None and reason.code is ReasonCode.VISIT_BUDGET_EXHAUSTED
    assert reason.stage == "work" and "budget is 2" in reason.message
    assert not d.of(DispatchMission)


def test_resume_rearms_visit_budgets() -> None:
    # SPEC B4, J3
    d = Driver(loop_graph(work={"maxVisits": 1}))
    d.finish("done")
    d.finish("VERDICT: FAIL")
    assert d.run.reason.code is ReasonCode.VISIT_BUDGET_EXHAUSTED  # type: ignore[union-attr]
    d.apply(ev.Resume)
    assert d.dispatched().stage == "work" and d.run.visits == {"work": 1} and d.run.reason is None


def test_resume_at_a_chosen_stage() -> None:
    # SPEC E3, J3
    d = Driver(loop_graph())
    d.apply(ev.StopRequested)
    d.finish("done")
    assert d.run.status is Status.INTERRUPTED
    d.apply(ev.Resume, stage="work")
    assert d.dispatched().stage == "work"
    with pytest.raises(EventRejected, match="no stage 'nowhere'"):
        d.apply(ev.Resume, stage="nowhere")


@pytest.mark.parametrize(
    ("policy", "code", "missions"),
    [
        ({"maxAttempts": 2}, ReasonCode.ATTEMPT_BUDGET_EXHAUSTED, 2),
        ({"maxCalls": 3}, ReasonCode.CALL_BUDGET_EXHAUSTED, 3),
        ({"maxUnits": 5, "unitCosts": {"review": 3}}, ReasonCode.COST_BUDGET_EXHAUSTED, 3),  # 1 + 3 + 1, then 3
    ],
)
def test_budgets_stop_the_run_before_the_call(policy: dict[str, object], code: ReasonCode, missions: int) -> None:
    # SPEC P1, P2
    d = Driver(loop_graph(policy=policy))
    while d.run.status is Status.RUNNING:
        d.finish("VERDICT: FAIL" if d.run.stage == "review" else "done")
    assert d.run.status is Status.ESCALATED and d.run.reason.code is code  # type: ignore[union-attr]
    assert len(d.run.missions) == missions and not d.of(DispatchMission)


def test_failed_work_is_charged_and_never_refunded() -> None:
    # SPEC P2, E1
    d = Driver(loop_graph())
    d.finish(
        "Traceback: boom",
        status=MissionStatus.FAILED,
        exit_code=1,
        usage=Usage(input_tokens=100, output_tokens=5, cost_usd=0.25),
    )
    assert d.run.status is Status.FAILED and d.run.reason.code is ReasonCode.MISSION_FAILED  # type: ignore[union-attr]
    assert "Traceback: boom" in d.run.reason.message  # type: ignore[union-attr]
    line = d.run.ledger.by_category[Category.DELIVER]
    assert (line.attempts, line.calls, line.accepted, line.cost_usd) == (1, 1, 0, 0.25)


def test_cost_in_usd_is_checked_against_recorded_spend() -> None:
    # SPEC P1
    d = Driver(loop_graph(policy={"maxCostUsd": 1.0}))
    d.finish("done", usage=Usage(cost_usd=1.5))
    assert d.run.reason.code is ReasonCode.COST_BUDGET_EXHAUSTED  # type: ignore[union-attr]


def test_resume_rearms_the_policy_window_but_the_ledger_keeps_growing() -> None:
    # SPEC P2, B4
    d = Driver(loop_graph(policy={"maxAttempts": 1}))
    d.finish("done")
    assert d.run.reason.code is ReasonCode.ATTEMPT_BUDGET_EXHAUSTED  # type: ignore[union-attr]
    d.apply(ev.Resume)
    assert d.dispatched().stage == "review" and d.run.ledger.attempts == 2


def test_requires_changes_without_a_commit_is_not_accepted_and_costs_a_visit() -> None:
    # SPEC P4
    d = Driver(loop_graph(work={"requiresChanges": True}))
    d.finish("I changed everything", commits=0)
    assert d.dispatched().stage == "work" and d.run.visits["work"] == 2
    assert d.run.ledger.accepted == 0 and d.run.ledger.attempts == 2
    d.finish("now really", commits=2)
    assert d.run.stage == "review" and d.run.ledger.accepted == 1


def test_gate_waits_then_approval_follows_the_recorded_verdict() -> None:
    # SPEC H1, H2, C1
    d = Driver(loop_graph(work={"humanGate": True}))
    d.finish("plan ready")
    assert d.run.status is Status.GATE_WAIT and d.of(OpenGate) and d.of(OpenPullRequest)
    gate = d.run.gate
    assert gate is not None and (gate.stage, gate.verdict, gate.mission) == ("work", "PASS", 1)
    d.apply(ev.GateApproved, note="Keep it small.", by="alice")
    assert d.dispatched().stage == "review" and "Keep it small." in d.dispatched().prompt.context
    assert d.run.path[-1].by == "alice" and d.run.gate is None


def test_gate_amendment_reruns_the_node_without_a_visit() -> None:
    # SPEC H3, B3
    d = Driver(loop_graph(work={"humanGate": True}))
    d.finish("plan v1")
    d.apply(ev.GateAmended, note="Also handle empty input.", by="bob")
    mission = d.dispatched()
    assert mission.kind is MissionKind.AMEND and mission.stage == "work" and d.run.visits == {"work": 1}
    assert "Also handle empty input." in mission.prompt.context and "Also handle empty input." in mission.prompt.note
    assert d.run.ledger.by_category[Category.AMEND].calls == 1


def test_autopilot_passes_gates_and_logs_each_pass() -> None:
    # SPEC H4
    d = Driver(loop_graph(work={"humanGate": True}), autopilot=True)
    d.finish("plan")
    assert d.dispatched().stage == "review"
    assert any(m.kind == "autopilot" for m in d.of(PostMessage))
    assert "passed by autopilot" in d.run.context.results[-1].routing[0]


def test_gate_events_outside_a_gate_are_rejected_and_change_nothing() -> None:
    # SPEC H1, GH7
    d = Driver(loop_graph())
    before = d.run
    with pytest.raises(EventRejected, match="must be gate_wait"):
        d.apply(ev.GateApproved)
    assert d.run is before


def test_stop_while_a_mission_runs_interrupts_when_it_returns() -> None:
    # SPEC J4, S
    d = Driver(loop_graph())
    d.apply(ev.StopRequested, by="alice")
    assert d.run.status is Status.RUNNING and d.run.stop_requested
    d.finish("done")
    assert d.run.status is Status.INTERRUPTED and d.run.stage == "review"
    assert d.run.reason.code is ReasonCode.STOPPED and not d.of(DispatchMission)  # type: ignore[union-attr]
    d.apply(ev.Resume)
    assert d.dispatched().stage == "review"


def _last_mission_returns(kind: str) -> tuple[Driver, Callable[[Driver], object]]:
    """A run whose next result leads to ``__end__``, and how that result returns."""
    if kind == "check":
        d = Driver(
            graph(
                [node("work"), node("test", check="pytest")],
                [edge("work", "PASS", "test"), edge("test", "PASS", "__end__")],
                entry="work",
            )
        )
        d.finish("done")
        return d, lambda d: d.finish("3 passed", exit_code=0)
    if kind == "decision":
        d = Driver(
            graph(
                [node("triage", decide=True), node("fix")],
                [edge("triage", "DONE", "__end__"), edge("triage", "BUG", "fix"), edge("fix", "PASS", "__end__")],
                entry="triage",
            )
        )
        d.finish("Nothing to do here.")
        return d, lambda d: d.apply(ev.DecisionReturned, seq=d.run.waiting.seq, answer="DONE")  # type: ignore[union-attr]
    d = Driver(loop_graph(review={"humanGate": True}) if kind == "autopilot gate" else loop_graph(), autopilot=True)
    d.finish("done")
    return d, lambda d: d.finish("VERDICT: PASS")


@pytest.mark.parametrize("kind", ["mission", "check", "decision", "autopilot gate"])
def test_a_stop_during_the_last_mission_wins_over_the_end_and_resume_finishes(kind: str) -> None:
    # SPEC J4: a stop requested while the last mission runs wins even when its verdict leads to __end__: the
    # run is interrupted before the end, its result accepted; resuming goes to the end and runs nothing again
    d, returns = _last_mission_returns(kind)
    d.apply(ev.StopRequested)
    accepted, calls, missions = d.run.ledger.accepted, d.run.ledger.calls, d.run.mission_count
    returns(d)
    assert d.run.status is Status.INTERRUPTED and d.run.stage == END and not d.run.stop_requested
    assert d.run.reason is not None and d.run.reason.code is ReasonCode.STOPPED
    assert not d.of(ReadyPullRequest) and not d.of(DispatchMission) and not d.of(Finish)
    assert d.run.ledger.accepted == accepted + 1 and d.run.path[-1].to == END
    assert "resuming it goes to the end" in d.of(PostMessage)[-1].text
    d.apply(ev.Resume)
    assert d.run.status is Status.AWAITING_MERGE and d.run.stage == END and d.of(ReadyPullRequest)
    assert not d.of(DispatchMission) and d.run.ledger.calls == calls and d.run.mission_count == missions


def test_stop_before_a_mission_started_skips_it() -> None:
    # SPEC J4: the shell checks the stop before starting and reports the mission skipped
    d = Driver(loop_graph())
    d.apply(ev.StopRequested)
    d.finish("", status=MissionStatus.SKIPPED)
    assert d.run.status is Status.INTERRUPTED and d.run.stage == "work"
    assert d.run.missions[0].status is MissionStatus.SKIPPED


def test_stop_at_a_gate_interrupts_at_once() -> None:
    # SPEC J4
    d = Driver(loop_graph(work={"humanGate": True}))
    d.finish("plan")
    d.apply(ev.StopRequested)
    assert d.run.status is Status.INTERRUPTED


def test_interrupted_mission_resumes_first_with_its_own_session() -> None:
    # SPEC J3: a runner killed mid-mission; the record still waits on mission 2
    d = Driver(loop_graph())
    d.finish("done", session_id="sess-1")
    waiting = d.run.waiting
    assert waiting is not None and waiting.seq == 2
    d.run = d.run.but(waiting=waiting.but(session_id="sess-2"))
    d.apply(ev.Resume)
    mission = d.dispatched()
    assert (mission.kind, mission.stage, mission.session_id) == (MissionKind.RESUME, "review", "sess-2")
    assert d.run.missions[1].status is MissionStatus.CRASHED
    assert d.run.ledger.by_category[Category.RESUME].calls == 1
    with pytest.raises(StaleEvent):
        d.apply(ev.MissionFinished, seq=2, status=MissionStatus.DONE, answer="late")


def test_route_by_a_person_follows_the_chosen_edge() -> None:
    # SPEC E3
    d = Driver(loop_graph())
    d.finish("done")
    d.finish("VERDICT: X")
    d.finish("VERDICT: Y")
    d.apply(ev.RouteChosen, verdict="fail", by="carol")
    assert d.dispatched().stage == "work" and d.run.path[-1].by == "carol"


def test_route_on_an_unknown_label_is_rejected() -> None:
    # SPEC E3
    d = Driver(loop_graph())
    d.apply(ev.StopRequested)
    d.finish("", status=MissionStatus.SKIPPED)
    with pytest.raises(EventRejected, match="its labels: PASS"):
        d.apply(ev.RouteChosen, verdict="MAYBE")


def test_deliver_goes_to_the_end_and_merge_finishes() -> None:
    # SPEC E3, GH6, S
    d = Driver(loop_graph())
    d.finish("boom", status=MissionStatus.CRASHED)
    d.apply(ev.Deliver)
    assert d.run.status is Status.AWAITING_MERGE and d.of(ReadyPullRequest)
    d.apply(ev.Merged, by="dave")
    assert d.run.status is Status.DONE and d.of(Finish)[0].status is Status.DONE


def test_abandon_and_closed_cancel() -> None:
    # SPEC E3, GH6
    d = Driver(loop_graph())
    d.apply(ev.Abandon)
    assert d.run.status is Status.CANCELLED and d.of(Finish)
    other = Driver(loop_graph())
    other.finish("done")
    other.finish("VERDICT: PASS")
    other.apply(ev.Closed)
    assert other.run.status is Status.CANCELLED


def test_final_runs_accept_no_event() -> None:
    # SPEC S
    d = Driver(loop_graph())
    d.apply(ev.Abandon)
    for kind, fields in [(ev.Resume, {}), (ev.StopRequested, {}), (ev.Merged, {}), (ev.Abandon, {})]:
        with pytest.raises(RunFinished):
            d.apply(kind, **fields)


def test_same_idempotency_key_is_a_no_op() -> None:
    # SPEC J2
    d = Driver(loop_graph())
    d.finish("done")
    before = d.run
    d.count -= 1  # reuse the key of the last event
    d.apply(ev.MissionFinished, seq=1, status=MissionStatus.DONE, answer="done")
    assert d.run == before and d.effects == []


def test_advisor_retry_revise_and_default() -> None:
    # SPEC E4
    d = Driver(loop_graph(), advisor=True)
    d.finish("timeout", status=MissionStatus.TIMEOUT)
    ask = d.of(AskAdvisor)[0]
    assert d.run.status is Status.RUNNING and "ended timeout" in ask.question
    d.apply(ev.AdviceReturned, seq=ask.seq, advice="revise", instruction="Use a smaller change.")
    mission = d.dispatched()
    assert mission.kind is MissionKind.RETRY and "Use a smaller change." in mission.prompt.note
    assert d.run.ledger.by_category[Category.ADVISOR].calls == 1
    d.finish("again", status=MissionStatus.FAILED)
    d.apply(ev.AdviceReturned, seq=d.of(AskAdvisor)[0].seq, advice=None)  # off, slow or unparseable
    assert d.run.status is Status.FAILED and d.run.reason.code is ReasonCode.MISSION_FAILED  # type: ignore[union-attr]


def test_event_on_a_node_emits_on_pass() -> None:
    # SPEC G1 (event)
    d = Driver(loop_graph(review={"event": "feature.reviewed"}))
    d.finish("done")
    d.finish("VERDICT: PASS")
    assert d.of(EmitEvent) == [EmitEvent("feature.reviewed", "review")]


def test_record_has_the_journal_fields_and_round_trips() -> None:
    # SPEC J1
    d = Driver(loop_graph())
    d.finish("done", usage=Usage(input_tokens=10, output_tokens=3, cost_usd=0.01, seconds=2.0))
    data = d.run.journal()
    for name in (
        "id",
        "graph",
        "graph_hash",
        "status",
        "stage",
        "visits",
        "context",
        "recap",
        "request",
        "gate",
        "branch",
        "reason",
        "ledger",
        "upstream",
        "missions",
        "version",
    ):
        assert name in data
    ledger_fields = {"attempts", "calls", "units", "accepted", "by_category", "raises", "raise_count"}  # SPEC P5
    assert set(data["ledger"]) == ledger_fields
    assert set(data["missions"][0]) >= {
        "seq",
        "stage",
        "visit",
        "kind",
        "status",
        "verdict",
        "agent",
        "model",
        "duration_s",
        "usage",
    }
    assert data["status"] == "running" and data["missions"][0]["kind"] == "deliver"
    assert Run.from_journal(data) == d.run


def test_record_stays_bounded_however_long_the_run() -> None:
    # SPEC J5, C3: compacted context plus counters; summaries, hops, keys and the history of compacted results kept
    # in bounded windows (the history after a marker naming the last mission it cut). Nothing grows per mission.
    d = Driver(loop_graph(work={"maxVisits": 400}, review={"maxVisits": 400}))
    sizes = []
    for index in range(400):
        d.finish(("x" * 5000) + ("\nVERDICT: FAIL" if d.run.stage == "review" else ""))
        if index in (199, 299, 399):  # once the windows are full
            sizes.append(len(d.run.journal_json()))
    assert max(sizes) - min(sizes) < 4000  # give or take where the oldest history entries last left, as a chunk
    assert d.run.context.history[0].startswith("[… cut by Interlock: the compacted results up to mission #")
    assert d.run.mission_count == 401 and len(d.run.missions) == 16 and d.run.missions[-1].seq == 401
    assert d.run.hop_count == 400 and len(d.run.path) == 24 and len(d.run.applied) == 64


@pytest.mark.parametrize(
    ("setup", "answer", "status"),
    [
        ({"work": {"humanGate": True}}, "plan", MissionStatus.DONE),  # would open a gate
        ({}, "VERDICT: MAYBE", MissionStatus.DONE),  # would re-ask (at review)
        ({}, "crash", MissionStatus.FAILED),  # would ask the advisor
        ({"work": {"decide": True}}, "built", MissionStatus.DONE),  # would ask for a decision
    ],
)
def test_a_stop_requested_during_a_mission_wins_over_any_next_call(
    setup: dict[str, object], answer: str, status: MissionStatus
) -> None:
    # SPEC J4: checked when the mission returns, whatever would come next — gate, re-ask, advisor or decision
    d = Driver(loop_graph(**setup), advisor=True)
    if answer.startswith("VERDICT"):
        d.finish("done")
    calls = d.run.ledger.calls
    d.apply(ev.StopRequested)
    d.finish(answer, status=status)
    assert d.run.status is Status.INTERRUPTED and not d.run.stop_requested
    assert d.run.ledger.calls == calls and not d.of(DispatchMission) and not d.of(AskAdvisor) and not d.of(OpenGate)


def test_stop_on_a_failed_run_keeps_its_reason_and_merge_cancels_a_mission_in_flight() -> None:
    # SPEC E2, S
    d = Driver(loop_graph())
    d.finish("boom", status=MissionStatus.FAILED)
    d.apply(ev.StopRequested)
    assert d.run.status is Status.FAILED and d.run.reason.code is ReasonCode.MISSION_FAILED  # type: ignore[union-attr]
    other = Driver(loop_graph())
    other.apply(ev.Merged)
    assert other.run.status is Status.DONE and other.run.missions[0].status is MissionStatus.CANCELLED
