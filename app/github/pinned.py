"""The repository's pinned board issue, "Interlock board": its body, and the calls that make, pin and edit it.

The body (``app/webhooks/board/pinned.py`` renders it) is a table of the repository's runs from the board index and
says how to act on them with comment commands (``app/webhooks/board/commands.py``). It shows no age that moves with the
clock: the issue is edited only when what it shows changed, so a transition that changes no cell costs no call.
The issue carries ``BOARD_LABEL`` and the hidden ``BOARD_MARKER``, by which it is found again when the index
does not know its number (its maker failed before saving it, or the index was rewritten).

https://docs.github.com/en/rest/issues/issues#update-an-issue
https://docs.github.com/en/graphql/reference/mutations#pinissue
"""

from __future__ import annotations

from typing import Any

from githubkit.exception import GitHubException

from app.github.client import GitHubError, Installation

BOARD_TITLE = "Interlock board"
BOARD_LABEL = "interlock:board"
BOARD_MARKER = "<!-- interlock:board -->"
VERBS = {"pause": "stop", "resume": "resume", "retry": "retry", "cancel": "abandon"}  # board verb -> run command
HOW_TO_ACT = (
    "**Act on a run** with a comment on this issue, by a person with write permission: "
    + ", ".join(f"`/interlock {verb} RUN`" for verb in VERBS)
    + " (the same as `/interlock stop`, `resume`, `retry` and `abandon` on the run's own issue)."
)


def find_board_issue(api: Installation, repo: str) -> tuple[int, str]:
    """The open issue labelled ``BOARD_LABEL`` that carries ``BOARD_MARKER`` (the oldest): its number and body;
    ``(0, "")`` when there is none."""
    found = sorted(
        (int(issue["number"]), str(issue.get("body") or ""))
        for issue in api.issues_labelled(repo, BOARD_LABEL)
        if issue.get("state", "open") == "open" and BOARD_MARKER in str(issue.get("body") or "")
    )
    return found[0] if found else (0, "")


def create_board_issue(api: Installation, repo: str, body: str) -> tuple[int, str]:
    """The issue made, with its label: its number and node id (what ``pinIssue`` takes)."""
    fields = {"title": BOARD_TITLE, "body": api.shown(body), "labels": [BOARD_LABEL]}
    data = api.call("POST", f"/repos/{repo}/issues", json=fields)
    return int(data["number"]), str(data.get("node_id", ""))


def pin_issue(api: Installation, node_id: str) -> str:
    """Pin the issue; the reason it could not be ("" when pinned). A repository pins at most three issues, and a
    failure to pin must never fail the delivery: the board works unpinned, and is found by its label."""
    query = "mutation($id: ID!) { pinIssue(input: {issueId: $id}) { issue { number } } }"
    try:
        data: Any = api.github.graphql(query, {"id": node_id})
    except GitHubException as exc:  # GraphQLFailed (three pinned already, no permission), RequestFailed, ...
        return str(exc)[:200] or type(exc).__name__
    return "" if (data or {}).get("pinIssue") else "GitHub answered without the pinned issue"


def edit_board_issue(api: Installation, repo: str, number: int, body: str) -> str:
    """The issue's body rewritten; its state as GitHub answers (``closed``: a person closed it, maybe unseen)."""
    data = api.call("PATCH", f"/repos/{repo}/issues/{number}", json={"body": api.shown(body)})
    return str((data or {}).get("state") or "open") if isinstance(data, dict) else "open"


def board_issue_body(api: Installation, repo: str, number: int) -> str | None:
    """The issue's body as GitHub shows it now (``None``: the issue is gone); read on redeliveries only."""
    try:
        data = api.call("GET", f"/repos/{repo}/issues/{number}", missing_ok=True)
    except GitHubError as exc:
        if exc.status == 410:  # deleted
            return None
        raise
    return None if data is None else str(data.get("body") or "")
