"""How a trigger of a team with a queue or a stop starts on GitHub (SPEC U5, H4), kept out of the handlers.

Before the start: a stopped team, or one with a ``concurrency``, admits the trigger or queues it (the issue told its
place). After the start is recorded, and again when the start is redelivered (SPEC GH8), everything the start owes
is made sure of: the issue left its team's line (the write that takes it out may have lost to another replica
after the run was made), it left the line of every other team (a person relabelled it while it waited), and it is
held if its team was stopped meanwhile (a stop recorded between the check and the start did not list this run).
"""

from __future__ import annotations

from app.engine.record import Run
from app.github.teams import TeamSettings
from app.webhooks.delivery import Delivery, at
from app.webhooks.shell import GitHubRuns
from app.webhooks.teams.hold import hold_if_stopped, is_stopped, queue_terms
from app.webhooks.teams.queue import Waiting, admit, leave_other_queues, queued_payload, started
from app.webhooks.teams.requests import is_request, set_state


def may_start(runs: GitHubRuns, delivery: Delivery, issue: int, team: TeamSettings, app_slug: str | None) -> bool:
    """SPEC U5, H4: whether the trigger may start now; else it waits in the team's queue (once) and is told where.
    A stopped team's triggers all queue."""
    stopped = is_stopped(runs, team)
    if not stopped and team.concurrency is None:
        return True
    payload = queued_payload(delivery.payload, runs.api.redactor.text)
    queued_as, words = queue_terms(team, stopped)
    entry = Waiting(issue=issue, delivery=delivery.delivery_id, payload=payload)
    if admit(runs, queued_as, issue, entry, lambda place: words(team, place)) is None:
        return True
    if is_request(at(delivery.payload, "issue") or {}, app_slug):
        set_state(runs.api, runs.repo, issue, "accepted")  # SPEC U3: accepted, waiting for its turn
    return False


def settle_start(runs: GitHubRuns, team: TeamSettings, issue: int, run: Run) -> None:
    """What a recorded start owes, each step a no-op when done already (so its redelivery can repeat them)."""
    if team.concurrency is not None:
        started(runs, team, issue)  # SPEC U5: out of the line, its label gone
    leave_other_queues(runs, team, issue)
    hold_if_stopped(runs, team, run)  # SPEC H4: a stop recorded while it started
