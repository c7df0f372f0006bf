"""Deliveries checked against the base before they are proposed (SPEC V9): the engine's part."""

from __future__ import annotations

from typing import Any

from app.engine import events as ev
from app.engine.effects import AskDecision, DispatchMission, Escalate, ReadyPullRequest
from app.engine.events import GitState
from app.engine.graph.contract import verdict_contract
from app.engine.graph.validate import validate_graph
from app.engine.record import MissionStatus, ReasonCode, Run, Status
from tests.engine.driver import Driver
from tests.helpers import edge, graph, node

CONFLICTING = GitState(head="c0ffee", ahead=2, files_changed=("greet.py",), conflicts=("greet.py", "docs/a.md"))
CLEAN = GitState(head="c0ffee", ahead=2, files_changed=("greet.py",), conflicts=())


def delivery_graph(conflict_edge: bool = True, **review: Any) -> dict[str, Any]:
    """work → review → end; with the edge, review CONFLICT → resolve → review."""
    nodes = [node("work"), node("review", "review", **review)]
    edges = [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")]
    if conflict_edge:
        nodes.append(node("resolve"))
        edges += [edge("review", "CONFLICT", "resolve"), edge("resolve", "PASS", "review")]
    return graph(nodes, edges, entry="work")


def review_passes(d: Driver, git: GitState | None, answer: str = "VERDICT: PASS") -> None:
    d.finish("implemented")
    assert d.run.waiting is not None
    d.apply(ev.MissionFinished, seq=d.run.waiting.seq, status=MissionStatus.DONE, answer=answer, git=git)


def test_a_conflict_at_the_end_follows_the_conflict_edge() -> None:
    # SPEC V9: the run branch conflicts with the base and the delivering node has a CONFLICT edge
    d = Driver(delivery_graph())
    review_passes(d, CONFLICTING)
    assert d.run.status is Status.RUNNING and d.run.stage == "resolve"
    assert not d.of(ReadyPullRequest)  # the pull request is not marked ready
    assert d.dispatched().stage == "resolve"
    assert [(hop.stage, hop.verdict, hop.to) for hop in d.run.path][-1] == ("review", "CONFLICT", "resolve")
    routing = d.run.context.results[-1].routing  # what the resolve step's prompt shows of the conflict
    assert "conflicts with its base 'develop' in 2 file(s): greet.py, docs/a.md" in routing[-2]
    assert "resolve" in d.dispatched().prompt.context and "docs/a.md" in d.dispatched().prompt.context


def test_a_conflict_without_an_edge_escalates_naming_the_files() -> None:
    # SPEC V9: no CONFLICT edge: base_conflict, the files in the reason and in the decision file
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, CONFLICTING)
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert d.run.reason.code is ReasonCode.BASE_CONFLICT and d.run.reason.stage == "review"
    assert "greet.py, docs/a.md" in d.run.reason.message
    decision = d.of(Escalate)[0].decision
    assert "`base_conflict`" in decision and "conflicts with base: greet.py, docs/a.md" in decision
    assert not d.of(ReadyPullRequest)


def test_a_clean_base_or_an_unknown_state_ends_normally() -> None:
    # SPEC V9, GH6: nothing conflicts (or the event carries no git state): the pull request is marked ready
    for git in (CLEAN, None):
        d = Driver(delivery_graph())
        review_passes(d, git)
        assert d.run.status is Status.AWAITING_MERGE and d.of(ReadyPullRequest)


def test_a_satellite_conflict_counts_and_is_named_with_its_repository() -> None:
    # SPEC V9, U7: a satellite's pull request is marked ready too
    git = GitState(head="c0ffee", satellites=(("acme/docs", GitState(conflicts=("index.md",))),))
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, git)
    assert d.run.reason is not None and "acme/docs:index.md" in d.run.reason.message


def test_the_resolve_loop_is_bounded_and_ends_once_the_base_is_clean() -> None:
    # SPEC V9, B1: resolve → review → end is checked again; a still-conflicting base loops within maxVisits
    d = Driver(delivery_graph())
    review_passes(d, CONFLICTING)
    d.finish("merged the base, resolved greet.py")  # resolve
    d.apply(ev.MissionFinished, seq=d.run.waiting.seq, status=MissionStatus.DONE, answer="", git=CLEAN)  # type: ignore[union-attr]
    assert d.run.status is Status.AWAITING_MERGE and d.run.visits["resolve"] == 1


def test_a_worker_cannot_claim_the_engine_verdict() -> None:
    # SPEC V9, V5: CONFLICT is never offered to a worker, and an answer saying it does not take the edge
    d = Driver(delivery_graph())
    assert "CONFLICT" not in verdict_contract(d.graph, "review").text
    assert d.graph.labels("review") == ("PASS", "FAIL")
    review_passes(d, CLEAN, answer="VERDICT: CONFLICT")
    assert d.run.stage == "review" and d.run.reasked  # unroutable: asked once more, never routed to resolve
    assert [e.stage for e in d.effects if isinstance(e, DispatchMission)] == ["review"]


def test_a_person_delivering_by_hand_is_not_checked() -> None:
    # SPEC V9, E3: `deliver` is a person's word given after reading the decision: the end, conflicts or not
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, CONFLICTING)
    d.apply(ev.Deliver, by="alice", git=CONFLICTING)
    assert d.run.status is Status.AWAITING_MERGE


def test_a_conflict_edge_to_the_end_escalates_instead_of_looping() -> None:
    # SPEC V9: the end again would conflict again
    spec = graph([node("work")], [edge("work", "PASS", "__end__"), edge("work", "CONFLICT", "__end__")], entry="work")
    d = Driver(spec)
    d.apply(ev.MissionFinished, seq=1, status=MissionStatus.DONE, answer="", commits=1, git=CONFLICTING)
    assert d.run.reason is not None and d.run.reason.code is ReasonCode.BASE_CONFLICT


def test_the_validator_accepts_a_conflict_edge() -> None:
    # SPEC V9: CONFLICT is an edge label the delivering node may carry
    validation = validate_graph(delivery_graph())
    assert validation.valid and not validation.issues, validation.issues


def test_a_decision_model_is_never_offered_the_engine_verdict() -> None:
    # SPEC V9, V8: the closed list a decision model picks from leaves CONFLICT out
    spec = delivery_graph(decide=True)
    d = Driver(spec)
    d.finish("implemented")
    d.finish("looks fine")  # the review's mission; its decision is asked next
    (asked,) = d.of(AskDecision)
    assert asked.labels == ("PASS", "FAIL") and "CONFLICT" not in asked.prompt


def test_a_supervision_run_proposes_no_merge_and_is_not_checked() -> None:
    # SPEC V9, U6: what a supervision run delivers are requests: it is done at its end, whatever its branch
    d = Driver(delivery_graph(conflict_edge=False), supervision=True)
    review_passes(d, CONFLICTING)
    assert d.run.status is Status.DONE


def test_a_long_list_of_conflicts_is_cut_in_the_reason_and_whole_in_the_decision_file() -> None:
    # SPEC V9, E2, J5: the reason stays short; the decision file's delivery section names every file
    many = tuple(f"src/f{index:02d}.py" for index in range(25))
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, GitState(head="c0ffee", files_changed=many, conflicts=many))
    assert d.run.reason is not None and d.run.reason.message.endswith("src/f19.py and 5 more")
    assert "in 25 file(s)" in d.run.reason.message and "src/f24.py" in d.of(Escalate)[0].decision


def approved_at_the_last_gate(conflict_edge: bool, found: GitState) -> Driver:
    """The review's gate opens on a mission whose job found ``found``; a person approves it with an event that
    carries no git state, as a review on GitHub does (the service has no clone)."""
    d = Driver(delivery_graph(conflict_edge, humanGate=True))
    review_passes(d, found)
    assert d.run.status is Status.GATE_WAIT
    d.apply(ev.GateApproved, by="alice", commit=found.head)
    return d


def test_an_approval_without_git_state_is_checked_against_what_the_last_mission_found() -> None:
    # SPEC V9, H5: the approval at the last gate ends the run only if the head it approved did not conflict
    d = approved_at_the_last_gate(False, CONFLICTING)
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert d.run.reason.code is ReasonCode.BASE_CONFLICT and "greet.py, docs/a.md" in d.run.reason.message
    assert "as the last check found it, at c0ffee" in d.run.reason.message
    assert "`deliver` ends the run unchecked" in d.run.reason.message
    decision = d.of(Escalate)[-1].decision
    assert "conflicts with base when last read (head `c0ffee`): greet.py, docs/a.md" in decision
    assert "resolve the conflicts, then resume" in decision and not d.of(ReadyPullRequest)
    routed = approved_at_the_last_gate(True, CONFLICTING)
    assert routed.run.status is Status.RUNNING and routed.run.stage == "resolve"
    assert approved_at_the_last_gate(False, CLEAN).run.status is Status.AWAITING_MERGE


def test_a_newer_clean_state_replaces_the_remembered_conflict() -> None:
    # SPEC V9: the resolve step's job found the base clean: a person's route to the end is no longer refused
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, CONFLICTING)
    assert d.run.conflicts == ["greet.py", "docs/a.md"] and d.run.conflict_count == 2
    d.apply(ev.RouteChosen, by="alice", verdict="PASS")  # no git state: what the review's job found still holds
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert d.run.reason.code is ReasonCode.BASE_CONFLICT
    d.apply(ev.Resume, by="alice")
    assert d.run.waiting is not None
    d.apply(ev.MissionFinished, seq=d.run.waiting.seq, status=MissionStatus.DONE, answer="VERDICT: PASS", git=CLEAN)
    assert d.run.status is Status.AWAITING_MERGE and d.run.conflicts == [] and d.run.conflict_count == 0


def test_the_remembered_conflicts_are_bounded() -> None:
    # SPEC V9, J5: the record keeps the first hundred names and the count; the reason says the count
    many = tuple(f"src/f{index:03d}.py" for index in range(250))
    d = Driver(delivery_graph(conflict_edge=False, humanGate=True))
    review_passes(d, GitState(head="c0ffee", files_changed=many, conflicts=many))
    assert len(d.run.conflicts) == 100 and d.run.conflict_count == 250
    d.apply(ev.GateApproved, by="alice", commit="c0ffee")
    assert d.run.reason is not None and "in 250 file(s)" in d.run.reason.message
    assert "src/f019.py and 230 more" in d.run.reason.message


def test_a_decision_without_git_state_says_how_many_conflicts_it_does_not_name() -> None:
    # SPEC V9, J5: the record keeps a hundred names; the decision file's delivery section says the rest exist
    many = tuple(f"src/f{index:03d}.py" for index in range(250))
    d = approved_at_the_last_gate(False, GitState(head="c0ffee", files_changed=many, conflicts=many))
    decision = d.of(Escalate)[-1].decision
    assert "src/f099.py and 150 more" in decision and "src/f100.py" not in decision


def test_a_record_without_remembered_conflicts_encodes_as_one_written_before_them() -> None:
    # SPEC J6, V9: the fields came after records were hashed; left out while empty, a record written before them
    # reads and encodes to the same bytes, so `interlock verify` replays an older run without a false drift
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, CLEAN)
    written = d.run.journal_json()
    assert b'"conflicts"' not in written and b'"conflict_count"' not in written
    assert Run.from_journal(written).journal_json() == written
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, CONFLICTING)
    kept = Run.from_journal(d.run.journal_json())
    assert kept.conflicts == ["greet.py", "docs/a.md"] and kept.conflict_count == 2


def test_a_state_that_read_nothing_keeps_the_remembered_conflicts() -> None:
    # SPEC V9: a job that could not read the branch reports an empty state: it says nothing about the conflict
    d = Driver(delivery_graph(conflict_edge=False))
    review_passes(d, CONFLICTING)
    d.apply(ev.Resume, by="alice")
    assert d.run.waiting is not None
    d.apply(ev.MissionFinished, seq=d.run.waiting.seq, status=MissionStatus.DONE, answer="", git=GitState())
    assert d.run.conflicts == ["greet.py", "docs/a.md"] and d.run.head == "c0ffee"
