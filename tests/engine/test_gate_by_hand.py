"""A gate a person's hand would pass (issue 28, hostile review; SPEC H1, H6): with duties separated, the requester
may not carry the run past a stage with a human gate by stopping it first and then delivering it, or resuming
at another stage. Another person with the permission may; a route opens the gate (test_route_refused.py)."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.errors import GateRefused
from app.engine.record import Status
from app.engine.rules import Rules
from tests.engine.driver import Driver
from tests.engine.test_gates import SEPARATED, at_gate


def stopped_at_gate() -> Driver:
    """Alice's run waits at the gate of `work`, duties separated; she stops it: interrupted, still at `work`."""
    d = at_gate(SEPARATED, by="Alice")
    d.apply(ev.StopRequested, by="Alice")
    assert (d.run.status, d.run.stage) == (Status.INTERRUPTED, "work")
    return d


@pytest.mark.parametrize(("kind", "fields"), [(ev.Deliver, {}), (ev.Resume, {"stage": "review"})])
def test_the_requester_cannot_pass_a_stopped_gate_by_hand(kind: type[ev.Event], fields: dict[str, str]) -> None:
    # SPEC H6: before, a stop turned `gate_wait` into `interrupted` and the check no longer applied
    d = stopped_at_gate()
    before = d.run
    with pytest.raises(
        GateRefused, match="alice requested this run and duties are separated: the run stands at `work`"
    ):
        d.apply(kind, by="alice", **fields)
    assert d.run == before


def test_another_person_may_deliver_and_the_requester_may_resume_the_gated_stage_itself() -> None:
    # SPEC H6 binds the requester only, and re-running the gated stage passes nothing
    d = stopped_at_gate()
    d.apply(ev.Resume, by="Alice")
    assert d.run.status is Status.RUNNING and d.run.stage == "work"
    d = stopped_at_gate()
    d.apply(ev.Deliver, by="carol")
    assert d.run.status is Status.AWAITING_MERGE


def test_under_rules_4_a_delivery_replays_as_recorded() -> None:
    # SPEC J6: a delivery made under rules 4 is replayed as it was accepted
    d = stopped_at_gate()
    d.rules = Rules(4)
    d.apply(ev.Deliver, by="Alice")
    assert d.run.status is Status.AWAITING_MERGE
