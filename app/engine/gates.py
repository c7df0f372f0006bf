"""Which reviews pass a human gate (SPEC H5, H6). Pure rules over the run, its graph and the person's event.

An approval means "I reviewed this": it counts only for the commit the gate opened on, so that work pushed
after the review (or a review started on an older commit) is never approved by accident. Where duties are
separated (the graph's ``gates: {separateDuties: true}``, or the run's team), the person who requested the run
may not approve its gates, as protected-branch rules keep an author from approving their own pull request.
"""

from __future__ import annotations

from app.engine.errors import GateRefused
from app.engine.events import Event, GateAmended, GateApproved
from app.engine.record import Gate, Run, Status
from app.engine.rules import Change
from app.engine.transition import Transition

SHORT = 7  # a commit as people read it: GitHub's short form


def short(commit: str) -> str:
    return commit[:SHORT]


def duties_separated(t: Transition) -> bool:
    return t.graph.gates.separate_duties or t.run.separate_duties


def same_person(a: str, b: str) -> bool:
    """GitHub logins (and local user names) compared as GitHub compares logins: without regard to case."""
    return bool(a.strip()) and a.strip().casefold() == b.strip().casefold()


def check_review(t: Transition, gate: Gate, event: GateApproved | GateAmended) -> None:
    """Refuse (``GateRefused``, nothing changes) a review of another commit than the gate's (SPEC H5). A gate
    that knows no head (a record older than H5, a shell that could not read the branch) and an event that names
    no commit (``None``: its shell cannot say) are not compared."""
    if gate.head is None or event.commit is None or event.commit == gate.head:
        return
    what = "approval" if isinstance(event, GateApproved) else "request for changes"
    reviewed = f"commit `{short(event.commit)}`" if event.commit else "no commit"
    raise refusal(
        t,
        event,
        f"this {what} was for {reviewed}, not for `{short(gate.head)}`, the commit the gate at `{gate.stage}` "
        "opened on: the branch has moved since the commit that was reviewed, and a review counts only for the "
        f"commit the gate opened on; review `{short(gate.head)}` to pass the gate",
    )


def check_duties(t: Transition, event: Event) -> None:
    """SPEC H6: with duties separated, the requester passes none of the run's gates: no approval, and no route
    or delivery by hand while the run waits at one."""
    if t.run.status is not Status.GATE_WAIT or not duties_separated(t):
        return
    if same_person(event.by, t.run.requested_by):
        raise refusal(
            t,
            event,
            f"{event.by} requested this run and duties are separated: another person with the permission must "
            "approve its gates",
        )


def check_hand_past_gate(t: Transition, event: Event) -> None:
    """SPEC H6 for a run that leaves its stage by a person's hand (a delivery, a resume at another stage): besides
    an open gate, from rules 5 a stage with a human gate the run stands at — stopped at it, escalated there — is
    one the requester may not pass either (issue 28: a stop, then a delivery, skipped the gate). A route past it
    opens the gate instead (``app/engine/people.py``)."""
    check_duties(t, event)
    if not t.rules.has(Change.ROUTE_OPENS_GATE) or t.run.autopilot or not duties_separated(t):
        return
    stage = t.run.stage
    if t.graph.has_stage(stage) and t.graph.node(stage).human_gate and same_person(event.by, t.run.requested_by):
        raise refusal(
            t,
            event,
            f"{event.by} requested this run and duties are separated: the run stands at `{stage}`, whose human "
            "gate another person with the permission must pass (`route VERDICT` opens the gate for them)",
        )


def approved_line(gate: Gate, event: GateApproved) -> str:
    """What the journal says of an accepted approval: who approved, and which commit (SPEC H5, H6)."""
    commit = event.commit or gate.head
    at = f" at commit {short(commit)}" if commit else ""
    return f"gate of {gate.stage} approved by {event.by or 'a person'}{at}"


def refusal(t: Transition, event: Event, message: str) -> GateRefused:
    run: Run = t.run
    return GateRefused(run.id, run.status.value, type(event).__name__, message)
