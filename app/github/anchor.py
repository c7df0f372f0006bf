"""The anchors of a run's chain on GitHub (SPEC J6): read back from its check run and its status comment.

Why these two: whoever can push to the state branch can strip or roll back the journal there, but cannot write a
check run (only the App that made it can) nor post as the App's bot. The check run is updated at every transition,
so its anchor is the freshest; the status comment is edited only when a person has something to do
(``app/webhooks/checks/status_update.py``), so its anchor lags, which is fine: a second witness. Only the App's own
witnesses count — check runs made by the App ``slug`` and comments whose author is ``<slug>[bot]`` (a person's
comment quoting an anchor is no evidence); with no slug known (a token, not the App's credentials, and no
``GITHUB_APP_SLUG``) any App's check run and any bot's comment is read, which can only add false alarms, never hide
a rollback. Both are found from the run's id alone — its branch ``interlock/<run-id>`` and, for a run of an issue,
the issue — never from the record, which is what is being checked. https://docs.github.com/en/rest/checks/runs
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.anchor import Witness, anchors_in
from app.github.checks import checks_at_head
from app.github.client import Installation
from app.github.status import MARKER

CHECK_RUN, STATUS_COMMENT = "the check run", "the status comment"
ISSUE_RUN = re.compile(r"issue-(?P<issue>\d+)(?:-\d+)?")  # app/webhooks/issue_runs.py names runs so
PAGES = 10  # pages of 100 comments searched for the status comment


def issue_of(run_id: str, linked: str | None = None) -> int | None:
    """The issue of a run: from its id when it names one, else the record's link (``linked``)."""
    named = ISSUE_RUN.fullmatch(run_id)
    if named is not None:
        return int(named["issue"])
    return int(linked) if linked is not None and linked.isdigit() else None


def github_witnesses(api: Installation, repo: str, run_id: str, issue: int | None, slug: str | None) -> list[Witness]:
    """The run's anchors on GitHub, the check run's first: each check run of the run on its branch's head (a
    completed one and the newer one that shows the run working again each say the version they were written at),
    then the status comment's."""
    found: list[Witness] = []
    for check in checks_at_head(api, repo, f"interlock/{run_id}") or []:
        if check.get("external_id") == run_id and _made_by(check, slug):
            summary = str((check.get("output") or {}).get("summary") or "")
            found += [Witness(CHECK_RUN, anchor) for anchor in anchors_in(summary, run_id)]
    if issue is not None:
        for comment in _comments(api, repo, issue):
            body = str(comment.get("body") or "")
            if MARKER.format(run_id=run_id) in body and _authored(comment, slug):
                found += [Witness(STATUS_COMMENT, anchor) for anchor in anchors_in(body, run_id)]
    return found


def _made_by(check: dict[str, Any], slug: str | None) -> bool:
    made = str((check.get("app") or {}).get("slug") or "")
    return made == slug if slug else bool(made)


def _authored(comment: dict[str, Any], slug: str | None) -> bool:
    login = str((comment.get("user") or {}).get("login") or "")
    return login == f"{slug}[bot]" if slug else login.endswith("[bot]")


def _comments(api: Installation, repo: str, issue: int) -> list[dict[str, Any]]:
    """The issue's comments with their authors (``Installation.issue_comments`` keeps only id and body)."""
    found: list[dict[str, Any]] = []
    for page in range(1, PAGES + 1):
        params = {"per_page": 100, "page": page}
        data = api.call("GET", f"/repos/{repo}/issues/{issue}/comments", params=params, missing_ok=True)
        batch = [c for c in data if isinstance(c, dict)] if isinstance(data, list) else []
        found += batch
        if len(batch) < 100:
            break
    return found
