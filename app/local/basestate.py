"""The delivery's git state on the events that may end a run, read on a person's machine (SPEC V9).

A mission's end carries the state the shell read right after it (``app/local/missions.py``). A gate approved,
a route or a resume a person chose, and a decision model's label can end the run too; the engine checks the
delivery against its base at the end only with the state an event carries, so here those events get the state
read from the repository as it is now — the base as it stands when the run is about to be proposed. A few git
commands (``git merge-tree --write-tree`` names the conflicting files), no worktree touched. A person's
``deliver`` is left as it is: the engine does not check it.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.events import DecisionReturned, Event, GateApproved, Resume, RouteChosen
from app.engine.record import Run
from app.local import satellites
from app.local.gitops import Repo, delivery_state

MAY_END = (GateApproved, RouteChosen, Resume, DecisionReturned)


def with_delivery_state(repo: Repo, run: Run, event: Event) -> Event:
    """``event`` with the delivery's current git state when it may end the run and carries none."""
    if event.git is not None or not isinstance(event, MAY_END):
        return event
    return replace(event, git=satellites.with_state(delivery_state(repo, run.branch, run.base), run))
