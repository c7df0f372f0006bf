"""When the status comment is edited: only when what a person must do changes (issue 16).

GitHub allows an App 80 content-creating requests a minute and 500 an hour, and every edit of a comment is one.
The run's check run carries its progress at every transition (``app/webhooks/checks/run.py``); the status comment
is edited when the run starts, and after a transition only when the run is not simply working on as before: it
stops, waits at a gate, asks a question, escalates, ends, is held with its team or released, or its stated reason
changes. A transition from a working run to a working run (a mission ended, the next one was dispatched) leaves
the comment as it is; the comment says where the progress is shown meanwhile. A redelivery compares the body
GitHub shows (``GitHubRuns._edit_status``), since the edit may be what failed.
"""

from __future__ import annotations

from app.engine.record import Run, Status
from app.github.status import HELD_TEAM


def for_people(run: Run) -> tuple[object, ...]:
    """What the comment tells a person to do, as a value: two runs equal here need no edit between them."""
    return (run.status, run.reason, run.links.get(HELD_TEAM))


def needs_comment(before: Run | None, after: Run) -> bool:
    """Whether a transition from ``before`` (``None``: not read, as at a start) to ``after`` edits the comment."""
    if before is None or after.status is not Status.RUNNING:
        return True
    return for_people(before) != for_people(after)
