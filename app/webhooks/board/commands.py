"""Commands in the comments of the pinned board issue (issue 14, item 2): ``/interlock pause RUN``, ``resume RUN``,
``retry RUN`` and ``cancel RUN``.

Each is the run command of the same meaning on the run's own issue (``stop``, ``resume``, ``retry``, ``abandon``:
``app/github/pinned.py`` ``VERBS``), parsed by the same parser and applied by the same path, so the journal records
it the same way, with who wrote it as the event's ``by``; a stopped team refuses a resume here as on the run's issue.
The caller checked the writer's permission. Anything else (an unknown verb, no run named, a run that does not exist,
a command the run's state refuses) gets a reply on the board issue and changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from app.engine.errors import EventRejected, RunNotFound
from app.engine.quoted import quoted
from app.engine.record import Run
from app.github.pinned import BOARD_LABEL, BOARD_MARKER, VERBS
from app.webhooks.commands import CommandError, parse_command
from app.webhooks.delivery import Delivery, at, list_at, text_at
from app.webhooks.router import Outcome
from app.webhooks.shell import GitHubRuns
from app.webhooks.stored_graph import GRAPH_ERRORS, graph_refused
from app.webhooks.teams.hold import refuse_while_stopped

RUN_ID = re.compile(r"[\w-][\w.-]{0,99}", re.ASCII)  # as a run branch names it (``interlock/<run>``)
BOARD_USAGE = ", ".join(f"`/interlock {verb} RUN`" for verb in VERBS)


def on_board_issue(delivery: Delivery, app_slug: str | None) -> bool:
    """Whether the comment is on the board issue (the payload says so, no call): it carries the board's label and
    marker, and the App opened it. The label alone is not enough: a person who can label (triage) would turn a run's
    own issue, or any issue, into a second board, and its run commands would be read as board commands."""
    issue = at(delivery.payload, "issue")
    author = text_at(issue, "user", "login") or ""
    made_by_app = author == f"{app_slug}[bot]" if app_slug else text_at(issue, "user", "type") == "Bot"
    return (
        made_by_app
        and BOARD_MARKER in (text_at(issue, "body") or "")
        and any(text_at(label, "name") == BOARD_LABEL for label in list_at(issue, "labels"))
    )


def board_command(
    runs: GitHubRuns,
    delivery: Delivery,
    issue: int,
    user: str,
    moment: datetime,
    moved: Callable[[GitHubRuns, Run], None],
) -> Outcome:
    """A writer's board command applied to the run it names; ``moved`` is what follows any transition of a run
    (its team's queue, its supervision)."""
    body = runs.api.redactor.text(text_at(delivery.payload, "comment", "body") or "")  # a person's text: masked
    words = body.strip().split("\n", 1)[0].split()
    verb, named = (words[1].lower() if len(words) > 1 else ""), words[2:]
    run_id = named[0] if len(named) == 1 else ""
    try:
        if verb not in VERBS or not RUN_ID.fullmatch(run_id):
            raise CommandError(f"{quoted(' '.join(words))} is not a board command ({BOARD_USAGE})")
        same = parse_command(f"/interlock {VERBS[verb]}", delivery.delivery_id, moment, user)  # the run's command
        make = refuse_while_stopped(runs, same)
        run = runs.apply(run_id, make)
    except (CommandError, EventRejected) as exc:
        runs.api.comment(runs.repo, issue, f"@{user} {exc}; nothing changed.")
        return Outcome.HANDLED
    except RunNotFound:
        runs.api.comment(runs.repo, issue, f"@{user} there is no run `{run_id}` in {runs.repo}; nothing changed.")
        return Outcome.HANDLED
    except GRAPH_ERRORS as exc:
        raise graph_refused(runs, run_id, exc) from None
    moved(runs, run)
    return Outcome.HANDLED
