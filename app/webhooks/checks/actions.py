"""The buttons of a run's check run (SPEC W5): a click runs the comment command it stands for.

A click arrives as ``check_run.requested_action`` from the person who clicked; it is the comment command the
button names, run as that person, with the same permission check, team stop and journal entry (the event's
``by``) as the comment (``app/webhooks/handlers.py``). A button the run no longer offers, a clicker without the
permission, or a check run that is not a run's, changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from app.engine.errors import EventRejected, RunNotFound
from app.engine.quoted import quoted
from app.engine.record import Run
from app.github.checks import ALL, CHECK_NAME, offered
from app.webhooks.commands import CommandError, parse_command
from app.webhooks.delivery import Delivery, at, number_at, text_at
from app.webhooks.router import Outcome
from app.webhooks.shell import GitHubRuns
from app.webhooks.teams.hold import refuse_while_stopped

log = logging.getLogger("interlock.webhooks")


def requested_action(
    delivery: Delivery,
    runs_of: Callable[[Delivery], GitHubRuns],
    moved: Callable[[GitHubRuns, Run], None],
    app_id: str,
) -> Outcome:
    """SPEC W5, GH7: a button of the run's check clicked. A check run that is not a run's ``Interlock`` check of
    this App is ignored; a clicker without the permission, or a button the run does not offer now, is told so on
    the run's issue, and nothing changes. ``moved`` is what follows a comment command's transition (a run that
    ended lets its team's queue move)."""
    found = _checked_run(delivery, runs_of, app_id)
    if found is None:
        return Outcome.IGNORED
    runs, run_id, run = found
    identifier = text_at(delivery.payload, "requested_action", "identifier") or ""
    user = delivery.require_sender()
    say = _teller(runs, int(run.links.get("issue") or 0), user)
    if not runs.config().allows(runs.api.permission(runs.repo, user)):
        say(f"only people with {runs.config().permission} permission can steer Interlock runs")
        return Outcome.HANDLED
    again = delivery.delivery_id in run.applied  # a redelivery: the click's button was offered when it came
    action = next((a for a in ALL if a.identifier == identifier and (again or a in offered(run.status))), None)
    if action is None:
        status = run.status.value
        say(f"{quoted(identifier, 20)} is not an action the check run of `{run.id}` offers while it is {status}")
        return Outcome.HANDLED
    make = refuse_while_stopped(runs, parse_command(action.command, delivery.delivery_id, datetime.now(UTC), user))
    try:
        after = runs.apply(run_id, make)
    except (CommandError, EventRejected, RunNotFound) as exc:
        say(str(exc))
        return Outcome.HANDLED
    moved(runs, after)
    return Outcome.HANDLED


def _checked_run(
    delivery: Delivery, runs_of: Callable[[Delivery], GitHubRuns], app_id: str
) -> tuple[GitHubRuns, str, Run] | None:
    """The run whose ``Interlock`` check of this App was clicked, with its repository's runs and the id the check
    names; ``None`` for any other check run (another App's of the same name, one naming no run, or a run on
    another branch)."""
    check = at(delivery.payload, "check_run") or {}
    run_id = text_at(check, "external_id") or ""
    app = number_at(check, "app", "id")
    if delivery.installation_id is None or text_at(check, "name") != CHECK_NAME or not run_id:
        return None
    if app is not None and app_id.isdigit() and app != int(app_id):
        return None  # another App's check of the same name
    runs = runs_of(delivery)
    run = runs.store.find(run_id)
    if run is None or (text_at(check, "check_suite", "head_branch") or run.branch) != run.branch:
        log.warning("ignored %s: check run %s is not a run's", delivery.describe(), text_at(check, "id"))
        return None
    return runs, run_id, run


def _teller(runs: GitHubRuns, issue: int, user: str) -> Callable[[str], None]:
    """A refusal said on the run's issue, as a comment command's is."""

    def say(why: str) -> None:
        log.info("refused a check run action of %s: %s", user, why)
        if issue:
            runs.api.comment(runs.repo, issue, f"@{user} {why}; nothing changed.")

    return say
