"""Comment commands (SPEC GH7): ``/interlock stop``, ``resume``, ``resume at STAGE``, ``route VERDICT``,
``route VERDICT at STAGE``, ``resume --upgrade [at STAGE]`` (SPEC J7, ``app/webhooks/upgrade_command.py``),
``deliver``, ``abandon``, ``retry``, ``answer …``, ``budget calls=+N …`` (SPEC P5)
(and ``team stop|start``, ``app/webhooks/teams/hold.py``).
Anything else is a ``CommandError`` whose message is the reply: what was not understood, and what is."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypedDict

from app.engine import events as ev
from app.engine.errors import InterlockError
from app.engine.quoted import quoted
from app.engine.raises import RaiseInvalid, parse_raise
from app.engine.record import Run
from app.webhooks.teams.satellites import deliver

USAGE = (
    "commands: `/interlock stop`, `/interlock resume`, `/interlock resume at STAGE`, `/interlock resume --upgrade`, "
    "`/interlock route VERDICT [at STAGE]`, `/interlock deliver`, `/interlock abandon`, `/interlock retry`, "
    "`/interlock answer TEXT`, `/interlock budget calls=+N usd=+N units=+N`, "
    "`/interlock team stop [TEAM]`, `/interlock team start [TEAM]`"
)

MakeEvent = Callable[[Run], ev.Event]


class CommandError(InterlockError):
    pass


class _Said(TypedDict):
    """The fields every command's event shares: which delivery, when, and who wrote the comment."""

    key: str
    at: datetime
    by: str


def parse_command(body: str, key: str, moment: datetime, by: str) -> MakeEvent:
    line, _, rest = body.strip().partition("\n")
    words = line.split()
    verb = words[1].lower() if len(words) > 1 else ""
    args = words[2:]
    common = _Said(key=key, at=moment, by=by)
    if verb == "stop" and not args:
        return lambda run: ev.StopRequested(**common)
    if verb in ("resume", "retry") and not args:
        return lambda run: ev.Resume(**common)
    if verb == "resume" and len(args) == 2 and args[0].lower() == "at":
        return lambda run: ev.Resume(**common, stage=args[1])
    if verb == "route" and len(args) == 1:
        return lambda run: ev.RouteChosen(**common, verdict=args[0])
    if verb == "route" and len(args) == 3 and args[1].lower() == "at":  # from the refused edge's stage (issue 28)
        return lambda run: ev.RouteChosen(**common, verdict=args[0], stage=args[2])
    if verb == "deliver" and not args:
        return lambda run: ev.Deliver(**common)
    if verb == "deliver":  # SPEC U7: `/interlock deliver owner/name[,owner/name]`, satellites delivered by hand
        return deliver(args, key, moment, by)
    if verb == "abandon" and not args:
        return lambda run: ev.Abandon(**common)
    if verb == "budget":  # SPEC P5: raise the limits of a run a budget stopped
        try:
            amounts = parse_raise(args)
        except RaiseInvalid as exc:
            raise CommandError(str(exc)) from None
        return lambda run: ev.BudgetRaised(**common, amounts=amounts)
    if verb == "answer":
        text = " ".join(args) + (f"\n{rest}" if rest else "")
        if text.strip():
            return lambda run: ev.InputAnswered(**common, text=text.strip())
    raise CommandError(f"{quoted(line)} is not a command Interlock knows ({USAGE})")
