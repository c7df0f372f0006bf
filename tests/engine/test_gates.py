"""Gates bound to what was reviewed (SPEC H5) and separate duties (SPEC H6), at the engine."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import events as ev
from app.engine.errors import EventRejected, GateRefused
from app.engine.events import GitState
from app.engine.record import MissionStatus, Run, Status
from tests.engine.driver import Driver, loop_graph

OLD = "1" * 40
HEAD = "a" * 40
NEWER = "b" * 40


def at_gate(graph: dict[str, Any] | None = None, head: str = HEAD, **start: Any) -> Driver:
    """A run waiting at the gate of `work`, whose mission left the run branch at ``head``."""
    d = Driver(graph or loop_graph(work={"humanGate": True}), **start)
    assert d.run.waiting is not None
    d.apply(
        ev.MissionFinished,
        seq=d.run.waiting.seq,
        status=MissionStatus.DONE,
        answer="plan ready",
        commits=1,
        git=GitState(head=head, ahead=2),
    )
    assert d.run.status is Status.GATE_WAIT
    return d


def unchanged(d: Driver, before: Run) -> bool:
    return d.run is before and d.run.status is Status.GATE_WAIT


def test_a_gate_records_the_branch_head_it_opened_on() -> None:
    # SPEC H5
    d = at_gate()
    assert d.run.gate is not None and d.run.gate.head == HEAD and d.run.head == HEAD
    assert Run.from_journal(d.run.journal_json()).gate == d.run.gate  # the journal keeps it


def test_a_record_older_than_gate_heads_still_loads() -> None:
    # SPEC H5: the new fields have defaults, so a journal written before them is read as it was
    d = at_gate()
    data = d.run.journal()
    for key in ("head", "requested_by", "separate_duties"):
        del data[key]
    del data["gate"]["head"]
    old = Run.from_journal(data)
    assert old.gate is not None and old.gate.head is None and old.requested_by == "" and not old.separate_duties


@pytest.mark.parametrize("commit", [OLD, NEWER, ""])
def test_an_approval_of_another_commit_changes_nothing_and_says_why(commit: str) -> None:
    # SPEC H5, GH5
    d = at_gate()
    before = d.run
    with pytest.raises(GateRefused) as refused:
        d.apply(ev.GateApproved, by="carol", commit=commit)
    assert unchanged(d, before)
    message = refused.value.message
    assert f"not for `{HEAD[:7]}`" in message and "the gate at `work` opened on" in message
    assert (f"commit `{commit[:7]}`" if commit else "no commit") in message


def test_a_request_for_changes_of_another_commit_changes_nothing() -> None:
    # SPEC H5, GH5
    d = at_gate()
    before = d.run
    with pytest.raises(GateRefused, match="this request for changes was for commit `1111111`"):
        d.apply(ev.GateAmended, by="carol", note="redo", commit=OLD)
    assert unchanged(d, before)
    d.apply(ev.GateAmended, by="carol", note="redo", commit=HEAD)
    assert d.run.status is Status.RUNNING and d.dispatched().stage == "work"


def test_an_approval_of_the_gate_head_passes_and_the_journal_names_reviewer_and_commit() -> None:
    # SPEC H5, H6: the decision is recorded with the reviewer and the commit
    d = at_gate()
    d.apply(ev.GateApproved, by="carol", commit=HEAD)
    assert d.dispatched().stage == "review"
    hop = d.run.path[-1]
    assert (hop.stage, hop.to, hop.by, hop.commit) == ("work", "review", "carol", HEAD)
    assert f"gate of work approved by carol at commit {HEAD[:7]}" in d.run.context.results[-1].routing


def test_a_gate_without_a_head_or_an_event_naming_none_is_not_compared() -> None:
    # SPEC H5: a gate that knows no head (an older record), or a shell that cannot say what was reviewed
    d = Driver(loop_graph(work={"humanGate": True}))
    d.finish("plan")  # no git state: no head known
    assert d.run.gate is not None and d.run.gate.head is None
    d.apply(ev.GateApproved, by="carol", commit=OLD)
    assert d.run.status is Status.RUNNING
    d = at_gate()
    d.apply(ev.GateApproved, by="carol")  # commit None
    assert d.run.status is Status.RUNNING and d.run.path[-1].commit == HEAD


def test_the_head_carries_to_a_gate_opened_by_a_decision() -> None:
    # SPEC H5: a decide node's gate opens on the decision's return, which reads no branch
    graph = loop_graph(work={"humanGate": True, "decide": True})
    d = Driver(graph)
    assert d.run.waiting is not None
    d.apply(ev.MissionFinished, seq=1, status=MissionStatus.DONE, answer="done", commits=1, git=GitState(head=HEAD))
    assert d.run.waiting is not None
    d.apply(ev.DecisionReturned, seq=d.run.waiting.seq, answer="PASS")
    assert d.run.status is Status.GATE_WAIT and d.run.gate is not None and d.run.gate.head == HEAD


SEPARATED = loop_graph(work={"humanGate": True}, gates={"separateDuties": True})


@pytest.mark.parametrize(
    ("graph", "team_rule"), [(SEPARATED, False), (loop_graph(work={"humanGate": True}), True)], ids=["graph", "team"]
)
def test_the_requesters_own_approval_is_refused_where_duties_are_separated(
    graph: dict[str, Any], team_rule: bool
) -> None:
    # SPEC H6: by the graph's `gates: {separateDuties: true}` or the run's team
    d = at_gate(graph, by="Alice", separate_duties=team_rule)
    assert d.run.requested_by == "Alice"
    before = d.run
    with pytest.raises(GateRefused, match="alice requested this run and duties are separated"):
        d.apply(ev.GateApproved, by="alice", commit=HEAD)  # logins compare without regard to case
    assert unchanged(d, before)
    for kind, fields in ((ev.RouteChosen, {"verdict": "PASS"}), (ev.Deliver, {})):  # passing the gate by hand
        with pytest.raises(GateRefused):
            d.apply(kind, by="Alice", **fields)
        assert unchanged(d, before)
    d.apply(ev.GateApproved, by="carol", commit=HEAD)
    assert d.run.status is Status.RUNNING and d.run.path[-1].by == "carol"


def test_the_requesters_own_approval_counts_when_duties_are_not_separated() -> None:
    # SPEC H6: the rule is off unless a graph or team asks for it
    d = at_gate(by="alice")
    d.apply(ev.GateApproved, by="alice", commit=HEAD)
    assert d.run.status is Status.RUNNING and d.run.path[-1].by == "alice"


def test_separate_duties_do_not_stop_the_requester_outside_a_gate() -> None:
    # SPEC H6 is about gates: the requester still routes an escalated run; the stage routed past is gated, so
    # from rules 5 its gate opens (issue 28: before, the route skipped it), for another person to approve
    d = Driver(SEPARATED, by="alice")
    d.apply(ev.StopRequested, by="alice")
    d.finish("work\nVERDICT: PASS")
    assert d.run.status is Status.INTERRUPTED
    d.apply(ev.RouteChosen, by="alice", verdict="PASS")
    assert d.run.status is Status.GATE_WAIT
    d.apply(ev.GateApproved, by="carol", commit=d.run.gate.head if d.run.gate else None)
    assert d.run.status is Status.RUNNING


def test_a_local_start_records_its_launcher_as_the_requester() -> None:
    # SPEC H6: a local run's Start names no login; its launch says who ran it
    from app.engine.record import Launch
    from tests.engine.driver import T0

    d = Driver(loop_graph(), launch=Launch(command="run", at=T0, by="dora"))
    assert d.run.requested_by == "dora"


def test_a_refusal_is_an_ordinary_rejection_for_the_shells() -> None:
    assert issubclass(GateRefused, EventRejected)
