"""The decisions a run hands to people, kept in its record with their outcome (SPEC E2, E3).

A stop writes a decision file with the options and a recommendation; until now nothing said what became of
it. The record keeps each decision (why, what was offered, what the rules recommended) and, when a person's
command ends the wait, the option taken, by whom and when, so that the journey, the decision file and the
issue can say it afterwards. Pure: the shells write and post what this returns.
"""

from __future__ import annotations

from app.engine.decision import decision_options, recommend
from app.engine.effects import MessageKind, PostMessage
from app.engine.record import DECISION_WINDOW, Choice, Decision, Reason, Run
from app.engine.transition import Transition

OUTCOME_HEADING = "## Outcome"
NAME_LENGTH = 64  # GitHub logins are at most 39 characters; a local `$USER` is cut here


def open_decision(t: Transition, reason: Reason) -> None:
    """Remember the decision the stop hands to a person, with the options and recommendation its file shows."""
    run = t.run
    number = run.decision_count + 1
    choice, _ = recommend(run, t.graph, t.git)
    decision = Decision(
        number=number,
        asked_at=t.at,
        stage=reason.stage or run.stage,
        reason=reason.code,
        after_mission=run.mission_count,
        options=[option.name for option in decision_options(run, t.graph)],
        recommended=choice,
    )
    run.decisions = [*run.decisions, decision][-DECISION_WINDOW:]
    run.decision_count = number


def open_decision_of(run: Run) -> Decision | None:
    """The decision the run waits on, if any: the newest, while nobody has chosen."""
    newest = run.decisions[-1] if run.decisions else None
    return newest if newest is not None and newest.choice is None else None


def close_decision(t: Transition, choice: Choice, taken: str, by: str) -> None:
    """A person's command ended the wait: record who chose what and when, and say it under the decision.
    A command on a run that waits on no decision (a stop a person asked for) records nothing."""
    decision = open_decision_of(t.run)
    if decision is None:
        return
    decided = decision.but(choice=choice, taken=taken, by=one_name(by) or "a person", decided_at=t.at)
    t.run.decisions = [*t.run.decisions[:-1], decided]
    t.emit(PostMessage(MessageKind.DECIDED, outcome_text(decided)))


def one_name(by: str) -> str:
    """Who decided, as one short run of printable words: ``$USER`` is anyone's to set, and a newline in it would
    forge lines (another ``## Outcome``) in the decision file, the issue's comment and the journey."""
    printable = "".join(c if c.isprintable() else " " for c in by)
    return " ".join(printable.split())[:NAME_LENGTH].strip()


def newest_decided(run: Run) -> Decision | None:
    """The newest decision a person has chosen on: the one a ``decided`` message speaks of."""
    return next((d for d in reversed(run.decisions) if d.choice is not None), None)


def decided_now(run: Run) -> Decision | None:
    """The decision the record's latest transition decided, if it did: its message is still owed."""
    decided = newest_decided(run)
    return decided if decided is not None and decided.decided_at == run.updated_at else None


def outcome_text(decision: Decision) -> str:
    """The outcome as the decision file and the issue say it."""
    when = f"{decision.decided_at:%Y-%m-%d %H:%M:%S} UTC" if decision.decided_at else "?"
    followed = "as recommended" if decision.taken == decision.recommended else f"recommended: {decision.recommended}"
    return f"Decided: {decision.taken} by {decision.by} at {when} ({followed})."


def outcome_section(decision: Decision) -> str:
    """What the decision file gains when the decision is made."""
    return f"\n{OUTCOME_HEADING}\n\n{outcome_text(decision)}\n"
