"""A person raises the limits of a run a budget stopped, and the run goes on where it stopped (SPEC P5).

Resuming would re-enter the stage and run again a mission whose result was already accepted (a decision's
mission, say), paying twice. A raise instead makes exactly the call the budget refused: the record holds it
(``Run.held``), with what it carried. The raise is kept in the ledger with who made it and when; it changes the
limits, never the totals, so the ledger stays the sum of its charges. A raise still too small stops the run
again, with the new figures.
"""

from __future__ import annotations

from app.engine.decisions import close_decision, one_name
from app.engine.events import BudgetRaised
from app.engine.flow import ask_advisor, decide, dispatch
from app.engine.people import reject
from app.engine.raises import RAISE_WINDOW, BudgetRaise, HeldCall, overflowing_limits, raised_policy, unset_limits
from app.engine.record import Choice, MissionKind, ReasonCode, Status, Waiting
from app.engine.transition import Transition

BUDGET_CODES = (
    ReasonCode.ATTEMPT_BUDGET_EXHAUSTED,
    ReasonCode.CALL_BUDGET_EXHAUSTED,
    ReasonCode.COST_BUDGET_EXHAUSTED,
)


def on_budget_raised(t: Transition, event: BudgetRaised) -> None:
    """Raise the limits, record who raised them, and make the held call."""
    run = t.run
    held = run.held
    code = run.reason.code if run.reason is not None else None
    if run.status is not Status.ESCALATED or code not in BUDGET_CODES or held is None:
        why = f"{run.status.value}" + (f", {code.value}" if code is not None else "")
        raise reject(t, event, f"the run was not stopped by a budget ({why}): there is no limit to raise")
    unset = unset_limits(run.policy, event.amounts)
    if unset or not event.amounts:
        raise reject(t, event, f"the run's policy sets no {', '.join(unset) or 'limit'}: there is nothing to raise")
    if too_large := overflowing_limits(run.policy, event.amounts):
        raise reject(t, event, f"{', '.join(too_large)} would be too large to count: raise it by less")
    record_raise(t, event, held.stage)
    run.policy = raised_policy(run.policy, event.amounts)
    close_decision(t, Choice.BUDGET, f"budget {t.run.ledger.raises[-1].text()}", event.by)
    run.status, run.reason, run.held = Status.RUNNING, None, None
    run.stage = held.stage
    make_held_call(t, held)


def record_raise(t: Transition, event: BudgetRaised, stage: str) -> None:
    """The raise in the ledger: by whom, when, where, how much (the newest RAISE_WINDOW kept, SPEC J5)."""
    ledger = t.own(t.run.ledger)
    ledger.by_category = dict(ledger.by_category)  # owned with its lines' dict, as ``Transition.ledger_line`` wants
    entry = BudgetRaise(by=one_name(event.by) or "a person", at=t.at, stage=stage, amounts=dict(event.amounts))
    ledger.raises = [*ledger.raises, entry][-RAISE_WINDOW:]
    ledger.raise_count += 1
    t.run.ledger = ledger
    t.add_line(f"budget raised by {entry.by}: {entry.text()}")


def make_held_call(t: Transition, held: HeldCall) -> None:
    """The call the budget refused, as it was: charged now, once (and refused again if still over a limit)."""
    if held.kind is MissionKind.DECIDE:
        decide(t, held.stage, held.detail)
    elif held.kind is MissionKind.ADVISOR:
        waiting = Waiting(seq=0, kind=held.kind, stage=held.stage, key="")
        ask_advisor(t, waiting, held.detail)
    else:
        dispatch(t, held.kind, note=held.detail, session_id=held.session_id)
