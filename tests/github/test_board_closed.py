# ruff: noqa: F811 - `world` and `board` are the imported fixtures, which pytest passes by name
"""A closed board issue (issue 28, part 7; SPEC W1): closing it is how a person says "no board issue", so the App
stops editing it and makes no other, until a person reopens it; then it is brought up to date. The board.md of the
state branch is written as ever."""

from __future__ import annotations

from app.github.pinned import BOARD_LABEL
from app.store.board_index import read_index
from app.webhooks.board.pinned import render_board_issue
from app.webhooks.router import Outcome
from tests.github.test_board_issue import board, board_issue, board_issues, label, row, state_file  # noqa: F401
from tests.github.test_flows import REPO, World, example, world  # noqa: F401 - the fixtures
from tests.helpers import doc


def board_event(world: World, action: str, user: str = "alice", delivery: str | None = None) -> Outcome:
    """The board issue closed or reopened by ``user``, as GitHub sends it (the App opened it, with its marker)."""
    made = board_issue(world)
    payload = example("issues", "reopened.payload.json")  # the corpus has no issues/closed example
    payload["action"] = action
    app_user = {**payload["issue"]["user"], "login": f"{world.fake.app_slug}[bot]", "type": "Bot"}
    state = "closed" if action == "closed" else "open"
    fields = {"number": made["number"], "labels": [{"name": BOARD_LABEL}], "body": made["body"], "user": app_user}
    payload["issue"] = {**payload["issue"], **fields, "state": state}
    payload["sender"] = {**payload["sender"], "login": user, "type": "Bot" if user.endswith("[bot]") else "User"}
    return world.deliver("issues", payload, delivery)


def edits(world: World, number: int) -> int:
    return sum(call == f"PATCH /repos/{REPO}/issues/{number}" for call in world.fake.calls("PATCH"))


def test_a_closed_board_issue_is_neither_edited_nor_made_again(board: World) -> None:
    # SPEC W1: a person closed it: no edit, no new issue, board.md still follows the runs
    label(board, 1)
    number = board_issue(board)["number"]
    assert board_event(board, "closed") is Outcome.HANDLED
    assert read_index(state_file(board, "board.json")).closed
    before, shown = edits(board, number), board_issue(board)["body"]
    board.job_done(1, 1, "build", "built it")  # the row changes: it would be edited if open
    label(board, 2)  # a new run: it would be shown
    assert edits(board, number) == before and board_issue(board)["body"] == shown
    assert len(board_issues(board)) == 1  # not made again
    assert "| issue-2 | #2 |" in state_file(board, "board.md")


def test_a_reopened_board_issue_is_brought_up_to_date_and_followed_again(board: World) -> None:
    # SPEC W1: a person reopened it: it shows the runs as they are now, and follows them again
    label(board, 1)
    board_event(board, "closed")
    board.job_done(1, 1, "build", "built it")
    assert " | gate_wait | " not in row(board, "issue-1")
    assert board_event(board, "reopened") is Outcome.HANDLED
    index = read_index(state_file(board, "board.json"))
    assert not index.closed and board_issue(board)["body"] == render_board_issue(index)
    assert " | gate_wait | " in row(board, "issue-1")
    board.review(1, "approved")
    assert " | `review` | running | " in row(board, "issue-1")


def test_closing_another_issue_or_the_apps_own_close_leaves_the_board_as_it_is(board: World) -> None:
    label(board, 1)
    assert board_event(board, "closed", user=f"{board.fake.app_slug}[bot]") is Outcome.OWN
    payload = example("issues", "reopened.payload.json")  # a run's own issue reopened: not the board
    payload["issue"] = {**payload["issue"], "number": 1, "body": "no marker"}
    assert board.deliver("issues", payload) is Outcome.IGNORED
    assert not read_index(state_file(board, "board.json")).closed


def test_the_readme_says_a_closed_board_issue_is_left_alone_until_reopened() -> None:
    text = " ".join(doc("operating/board.md").split())
    assert (
        'A closed board issue is how a person says "no board issue here": the close is recorded in `board.json` '
        "(`closed`), and the App neither edits it nor makes another (`board.md` is still kept) until a person "
        "reopens it, which brings it up to date at once."
    ) in text


def test_a_board_issue_closed_unseen_is_edited_once_at_most_then_left_alone(board: World) -> None:
    # SPEC W1 (hostile review): closed while the service did not see the delivery (down, an upgrade): the answer of
    # the next edit says `closed`, board.json records it, and no later transition edits it
    label(board, 1)
    made = board_issue(board)
    made["state"] = "closed"  # closed on GitHub; the issues.closed delivery never reached the service
    before = edits(board, made["number"])
    board.job_done(1, 1, "build", "built it")  # the row changes: one edit, whose answer says closed
    assert edits(board, made["number"]) - before <= 1
    assert read_index(board.fake.files_at(REPO, "interlock/state")["board.json"]).closed
    seen = edits(board, made["number"])
    board.review(1, "approved")
    assert edits(board, made["number"]) == seen
