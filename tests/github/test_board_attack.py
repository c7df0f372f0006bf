# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A hostile review of the board issue (issue 14, item 2): what a person can do to it or with it, against the
stand-in GitHub's state."""

from __future__ import annotations

import os

import pytest

from app.engine.record import Status
from app.github.config import RepoConfig
from app.github.pinned import BOARD_LABEL
from app.webhooks import shell
from app.webhooks.router import Outcome
from tests.github.test_board_issue import NO_BOARD, board, board_comment, board_issue, label, row  # noqa: F401
from tests.github.test_flows import REPO, World, example, world  # noqa: F401


def labelled_comment(world: World, issue: int, body: str, user: str = "alice") -> Outcome:
    """A comment on issue ``issue``, which a person labelled ``interlock:board`` (it is not the board issue)."""
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue, "labels": [{"name": BOARD_LABEL}]}
    payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
    return world.deliver("issue_comment", payload)


def test_a_run_issue_labelled_as_the_board_keeps_its_own_commands(board: World) -> None:
    # the label alone does not make an issue the board: `/interlock stop` on the run's issue still stops the run
    label(board, 1)
    board.job_done(1, 1, "build", "built it")  # at the gate: a stop stops it at once
    board_issue(board)
    assert labelled_comment(board, 1, "/interlock stop") is Outcome.HANDLED
    assert board.run(1).status is Status.INTERRUPTED
    assert not [c for c in board.fake.comments.values() if "not a board command" in c["body"]]


def test_an_issue_a_person_labelled_as_the_board_does_not_steer_other_runs(board: World) -> None:
    # a person who can label (triage) turns no issue of theirs into a second board
    label(board, 1)
    label(board, 2)
    version = board.run(2).version
    assert labelled_comment(board, 1, "/interlock cancel issue-2") is Outcome.HANDLED
    assert board.run(2).status is Status.RUNNING and board.run(2).version == version


def test_a_comment_on_the_board_that_is_not_a_command_is_ignored(board: World) -> None:
    label(board, 1)
    sent = len(board.fake.requests)
    assert board_comment(board, "thanks for the board! /interlock pause issue-1") is Outcome.IGNORED
    assert len(board.fake.requests) == sent and board.run(1).status is Status.RUNNING


@pytest.mark.parametrize(
    "run", [f"{os.pardir}/issue-1", "issue-1/x", "issue-1 issue-2", "ISSUE-1", ".issue-1", "issue-1\u200b"]
)
def test_a_forged_run_id_on_the_board_changes_nothing(board: World, run: str) -> None:
    label(board, 1)
    version = board.run(1).version
    assert board_comment(board, f"/interlock cancel {run}") is Outcome.HANDLED
    said = [c["body"] for c in board.fake.comments.values() if c["issue"] == board_issue(board)["number"]]
    assert len(said) == 1 and said[0].endswith("nothing changed.")
    assert board.run(1).version == version and board.run(1).status is Status.RUNNING


@pytest.mark.parametrize("value", ["yes", "garbage", "1", "on", "[]"])
def test_board_issue_takes_only_a_boolean(value: str) -> None:
    # `board_issue: "yes"` (quoted) or garbage: refused like any other malformed setting, not read as true
    with pytest.raises(ValueError):
        RepoConfig.model_validate({"board_issue": value})


def test_board_issue_off_then_on_again_shows_the_runs_of_the_off_time(world: World) -> None:
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", NO_BOARD)
    shell.CONFIG_CACHE.clear()
    label(world, 1)
    assert not [i for i in world.fake.issues if BOARD_LABEL in world.fake.labels.get((REPO, i["number"]), [])]
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", NO_BOARD.replace("false", "true"))
    shell.CONFIG_CACHE.clear()
    world.job_done(1, 1, "build", "built it")
    assert " | gate_wait | " in row(world, "issue-1")
