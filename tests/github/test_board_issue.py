# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""The pinned board issue and board.md on the state branch (issue 14, item 2; SPEC W1, W4), against the stand-in
GitHub's state: the issue made once and pinned, its table following runs, its commands, redeliveries and races."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.engine.record import Status
from app.github.pinned import BOARD_LABEL, BOARD_MARKER
from app.store.board_index import FINISHED_KEPT, read_index, render_markdown
from app.webhooks import shell
from app.webhooks.board.pinned import render_board_issue
from app.webhooks.router import Outcome
from tests.github.test_flows import (  # noqa: F401 - the fixtures
    REPO,
    World,
    example,
    merged_payload,
    retry_waits,
    world,
    writes,
)
from tests.helpers import doc

NO_BOARD = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nboard_issue: false\n"


@pytest.fixture
def board(world: World) -> World:
    """The world as it is by default: the board issue is on without a word in the configuration."""
    assert "board_issue" not in world.fake.files_at(REPO, "main").get(".github/interlock.yml", "")
    return world


def label(world: World, issue: int, delivery: str | None = None) -> Outcome:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": issue, "labels": [{"name": "feature-request"}]}
    return world.deliver("issues", payload, delivery)


def board_comment(world: World, body: str, user: str = "alice", delivery: str | None = None) -> Outcome:
    made = board_issue(world)  # as GitHub sends it: opened by the App, with its marker and label
    payload = example("issue_comment", "created.payload.json")
    app_user = {**payload["issue"]["user"], "login": f"{world.fake.app_slug}[bot]", "type": "Bot"}
    fields = {"number": made["number"], "labels": [{"name": BOARD_LABEL}], "body": made["body"], "user": app_user}
    payload["issue"] = {**payload["issue"], **fields}
    payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
    return world.deliver("issue_comment", payload, delivery)


def board_issues(world: World) -> list[dict[str, Any]]:
    return [
        issue
        for issue in world.fake.issues
        if issue["repo"] == REPO
        and not issue.get("deleted")
        and BOARD_LABEL in world.fake.labels.get((REPO, issue["number"]), [])
    ]


def board_issue(world: World) -> dict[str, Any]:
    found = board_issues(world)
    assert len(found) == 1, found
    return found[0]


def state_file(world: World, path: str) -> str:
    return world.fake.files_at(REPO, "interlock/state")[path]


def row(world: World, run: str) -> str:
    """The line of the board issue's table that shows ``run``."""
    lines = [line for line in board_issue(world)["body"].splitlines() if line.startswith(f"| `{run}` |")]
    assert len(lines) == 1, board_issue(world)["body"]
    return lines[0]


def test_the_board_issue_is_made_once_pinned_and_follows_a_run_to_its_end(board: World) -> None:
    # SPEC W1, W4: one issue per repository, pinned, its table kept current at start, mission, gate and end
    assert label(board, 1) is Outcome.HANDLED
    made = board_issue(board)
    assert made["title"] == "Interlock board" and made["body"].startswith(BOARD_MARKER)
    assert board.fake.pinned == [(REPO, made["number"])]
    cells = row(board, "issue-1").split(" | ")
    assert cells[:6] == ["| `issue-1`", "#1", "(default)", "`small`", "`build`", "running"] and cells[7] == "0.00 |"
    assert "`/interlock pause RUN`" in made["body"] and "`/interlock cancel RUN`" in made["body"]
    board.job_done(1, 1, "build", "built it")  # a mission ends: the gate
    assert " | `build` | gate_wait | " in row(board, "issue-1") and row(board, "issue-1").endswith(" | 0.01 |")
    board.review(1, "approved")
    assert " | `review` | running | " in row(board, "issue-1")
    board.job_done(1, 2, "review", "fine\nVERDICT: PASS")
    assert " | awaiting_merge | " in row(board, "issue-1")
    assert board.deliver("pull_request", merged_payload("interlock/issue-1")) is Outcome.HANDLED
    assert " | `end` | done | " in row(board, "issue-1") and row(board, "issue-1").endswith(" | 0.02 |")
    assert len(board_issues(board)) == 1 and len(board.fake.pinned) == 1


def test_board_md_on_the_state_branch_matches_the_index_saved_with_each_transition(board: World) -> None:
    # SPEC W1: board.md is written in the very commit of each transition, from board.json
    label(board, 1)
    label(board, 2)
    board.job_done(1, 1, "build", "built it")
    index = read_index(state_file(board, "board.json"))
    assert [(r.run, r.issue, r.status) for r in index.rows] == [("issue-1", 1, "gate_wait"), ("issue-2", 2, "running")]
    assert state_file(board, "board.md") == render_markdown(index)
    assert "| issue-2 | #2 | (default) | small | build | running |" in state_file(board, "board.md")
    head = board.fake.refs[(REPO, "interlock/state")]
    assert board.fake.commits[head]["message"].startswith("interlock: run issue-1")  # not a commit of its own
    assert index.issue == board_issue(board)["number"] and board_issue(board)["body"] == render_board_issue(index)


def test_a_transition_that_changes_no_cell_does_not_edit_the_issue_and_a_redelivery_changes_nothing(
    board: World,
) -> None:
    # SPEC GH8: the issue is edited only when what it shows changed; a redelivery writes nothing
    label(board, 1, "start-1")
    number = board_issue(board)["number"]
    edits = lambda: [c for c in board.fake.calls("PATCH") if c == f"PATCH /repos/{REPO}/issues/{number}"]  # noqa: E731
    before = len(edits())
    board.comment(1, "/interlock stop")  # a stop asked of a running run: the row shows the same
    assert len(edits()) == before
    board.job_done(1, 1, "build", "built it")
    assert len(edits()) == before + 1
    shown, sent = board_issue(board)["body"], len(board.fake.requests)
    assert label(board, 1, "start-1") is Outcome.HANDLED  # the start, redelivered
    assert writes(board, sent) == [] and board_issue(board)["body"] == shown


def test_board_commands_pause_resume_and_cancel_the_run_they_name_as_its_own_issues_commands_do(board: World) -> None:
    # SPEC GH7, J4: `/interlock pause|resume|cancel RUN` on the board issue; who said it is in the journal
    label(board, 1)
    board.job_done(1, 1, "build", "built it")  # at the gate: a pause stops it at once
    assert board_comment(board, "/interlock pause issue-1") is Outcome.HANDLED
    assert board.run(1).status is Status.INTERRUPTED and " | interrupted | " in row(board, "issue-1")
    assert board_comment(board, "/interlock resume issue-1") is Outcome.HANDLED
    assert board.run(1).status is Status.RUNNING and " | running | " in row(board, "issue-1")
    assert board_comment(board, "/interlock cancel issue-1", user="carol", delivery="cancel-1") is Outcome.HANDLED
    assert board.run(1).status is Status.CANCELLED and " | cancelled | " in row(board, "issue-1")
    state = board.fake.commits[board.fake.refs[(REPO, "interlock/state")]]
    assert state["message"].endswith("Abandon by carol (cancel-1)")  # the journal's commit names who
    assert board.fake.labels[(REPO, 1)] == ["interlock:cancelled"]
    version = board.run(1).version
    assert board_comment(board, "/interlock resume issue-1") is Outcome.HANDLED  # a state that refuses it
    said = [c["body"] for c in board.fake.comments.values() if c["issue"] == board_issue(board)["number"]]
    assert said[-1] == "@alice run issue-1 (cancelled): cannot apply Resume: the run is cancelled; nothing changed."
    assert board.run(1).version == version


def test_a_board_retry_resumes_a_failed_run_and_a_redelivered_command_changes_nothing(board: World) -> None:
    # SPEC GH7, GH8: retry is the run's `/interlock retry`; a redelivery of the command writes nothing
    label(board, 1)
    board.job_done(1, 1, "build", "", store_record=False)  # the job failed: the run fails
    assert board.run(1).status is Status.FAILED and " | failed | " in row(board, "issue-1")
    assert board_comment(board, "/interlock retry issue-1", delivery="retry-1") is Outcome.HANDLED
    assert board.run(1).status is Status.RUNNING and "retry-1" in board.run(1).applied
    sent, version = len(board.fake.requests), board.run(1).version
    assert board_comment(board, "/interlock retry issue-1", delivery="retry-1") is Outcome.HANDLED
    assert writes(board, sent) == [] and board.run(1).version == version


@pytest.mark.parametrize(
    ("body", "user", "reply"),
    [
        ("/interlock pause issue-9", "alice", f"@alice there is no run `issue-9` in {REPO}; nothing changed."),
        ("/interlock explode issue-1", "alice", "is not a board command (`/interlock pause RUN`, "),
        ("/interlock pause", "alice", "is not a board command"),
        ("/interlock cancel issue-1", "mallory", "@mallory only people with write permission can steer"),
    ],
)
def test_a_board_command_that_cannot_apply_gets_a_reply_and_changes_nothing(
    board: World, body: str, user: str, reply: str
) -> None:
    # SPEC GH7, GH9: an unknown run or verb, a state that refuses it, a person without write permission
    label(board, 1)
    version, number = board.run(1).version, board_issue(board)["number"]
    assert board_comment(board, body, user=user) is Outcome.HANDLED
    said = [c["body"] for c in board.fake.comments.values() if c["issue"] == number]
    assert len(said) == 1 and reply in said[0] and said[0].endswith("nothing changed.")
    assert board.run(1).version == version and board.run(1).status is Status.RUNNING


def test_two_first_transitions_at_once_make_one_board_issue_showing_both_runs(board: World) -> None:
    # SPEC J2: both find no issue; the claim on the state branch lets one make it, and its final render shows both
    index = next(i for i, route in enumerate(board.fake.routes) if route[2] == board.fake._create_issue)
    create = board.fake.routes[index][2]
    raced: list[Outcome] = []

    def create_while_another_starts(request: Any, body: Any, repo: str) -> Any:
        if BOARD_LABEL in (body.get("labels") or []) and not raced:
            raced.append(label(board, 2))  # the second start runs to its end while the first makes the issue
        return create(request, body, repo)

    board.fake.routes[index] = (*board.fake.routes[index][:2], create_while_another_starts)
    assert label(board, 1) is Outcome.HANDLED and raced == [Outcome.HANDLED]
    made = board_issue(board)  # exactly one
    assert board.fake.pinned == [(REPO, made["number"])]
    assert row(board, "issue-1") and row(board, "issue-2")
    assert read_index(state_file(board, "board.json")).issue == made["number"]


def test_a_start_that_failed_after_making_the_issue_finds_it_again_on_redelivery(board: World) -> None:
    # SPEC GH8: the issue was made and pinned, the save of its number failed; the redelivery makes no second one
    board.fake.fail("POST", "createCommitOnBranch", 502, times=10, after=1)  # the claim, then fail
    with pytest.raises(Exception, match="502"):
        label(board, 1, "start-1")
    assert len(board_issues(board)) == 1 and read_index(state_file(board, "board.json")).issue == 0
    board.fake.faults.clear()
    assert label(board, 1, "start-1") is Outcome.HANDLED
    made = board_issue(board)
    assert read_index(state_file(board, "board.json")).issue == made["number"] and len(board.fake.pinned) == 1
    assert row(board, "issue-1")


def test_a_board_issue_that_cannot_be_pinned_is_noted_and_the_delivery_goes_on(board: World) -> None:
    # a repository pins at most three issues: the board works unpinned, and board.json says why
    board.fake.pin_refusal = "Pinned issues limit reached"
    assert label(board, 1) is Outcome.HANDLED
    assert board.fake.pinned == [] and row(board, "issue-1")
    assert "Pinned issues limit reached" in read_index(state_file(board, "board.json")).pin_problem
    assert len(board.fake.dispatches) == 1  # the run started all the same


def test_board_issue_false_turns_the_issue_off_and_board_md_is_still_written(world: World) -> None:
    # the setting turns the issue off, never board.md
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", NO_BOARD)
    shell.CONFIG_CACHE.clear()
    label(world, 1)
    assert board_issues(world) == [] and world.fake.pinned == []
    assert "| issue-1 | #1 | (default) | small | build | running |" in state_file(world, "board.md")


def test_the_board_keeps_every_live_run_and_the_last_ended_ones() -> None:
    # the rows are bounded: live runs, then at most FINISHED_KEPT ended runs, the latest first
    from app.store.board_index import BoardIndex, with_run
    from tests.engine.driver import Driver, loop_graph

    index = BoardIndex()
    base = Driver(loop_graph()).run
    for n in range(FINISHED_KEPT + 5):
        ended = base.but(id=f"done-{n:02d}", status=Status.DONE, updated_at=base.updated_at.replace(minute=n))
        index = with_run(index, ended)
    index = with_run(index, base.but(id="live-1"))
    assert [r.run for r in index.rows][:2] == ["live-1", f"done-{FINISHED_KEPT + 4:02d}"]
    assert len(index.rows) == 1 + FINISHED_KEPT and "done-04" not in {r.run for r in index.rows}


def test_a_deleted_board_issue_is_made_again_at_the_next_transition(board: World) -> None:
    label(board, 1)
    gone = board_issue(board)["number"]
    board.fake.delete_issue(REPO, gone)  # GitHub answers 404 for it now
    assert board.job_done(1, 1, "build", "built it") is Outcome.HANDLED
    again = board_issue(board)
    assert again["number"] != gone and " | gate_wait | " in row(board, "issue-1")
    assert read_index(state_file(board, "board.json")).issue == again["number"]


def test_the_api_calls_of_the_board_are_what_the_readme_says() -> None:
    # issue 16: board.md costs no call; the board issue one call when what it shows for people changes (a run
    # starts, or its state changes), not at a mission -> mission transition (changed on purpose: bench_github)
    from tests.bench.bench_github import measure

    # with the check run (SPEC W5); a stop requested, which shows nowhere else, updates the check's anchor of the
    # chain's head (SPEC J6, changed on purpose in issue 28 part 6: 3 -> 4)
    assert [len(calls) for _, calls in measure(board=False)] == [21, 11, 6, 4, 4]
    with_board = measure()  # the board issue is on by default
    assert [len(calls) for _, calls in with_board] == [30, 12, 7, 4, 4, 19]
    edits = [
        [call for call in calls if re.fullmatch(r"PATCH /repos/octo/app/issues/\d+", call)] for _, calls in with_board
    ]
    assert [len(made) for made in edits] == [0, 1, 1, 0, 0, 1]  # the issue's edit, where a run's state changed
    text = " ".join(doc("operating/service.md", "operating/board.md").split())
    for sentence in README_SENTENCES:
        assert " ".join(sentence.split()) in text, sentence


README_SENTENCES = [
    "Every transition on GitHub also saves `board.json` (one row per run: run, issue, team, graph, stage, status, "
    "started, updated, missions, cost) and `board.md`, a table rendered from it, on `interlock/state`, in the same "
    "commit as the run's record: they cost no API call.",
    "The board keeps every live run and the 20 runs that ended last.",
    'The repository also gets one issue titled "Interlock board", labelled `interlock:board` and pinned, whose body '
    "is the table of its runs (a link to each run's issue, team, graph, step, state, start time and cost) and how to "
    "act on them.",
    "It is on by default, since it is the board people can read on GitHub without the service; each edit of it is "
    "one more content-creating request, of which GitHub allows an App 80 a minute and 500 an hour, so "
    "`board_issue: false` in `.github/interlock.yml` turns it off (and `board.md` is still kept).",
    "Two first transitions at once make one issue: each claims the making in `board.json` with compare-and-swap of "
    "the state branch and only the winner makes it; a delivery that failed after making it finds it again by its "
    "label on redelivery.",
    "An issue that cannot be pinned (a repository pins at most three) is noted in `board.json` (`pin_problem`) and "
    "the delivery goes on; a deleted board issue is made again at the next transition.",
    "The issue is edited only when what it shows for people changed: a run started, or a run's state changed (a run "
    "that works on from one mission to the next does not edit it; its step and cost are as of the last edit, and "
    "`board.md` follows every transition); a redelivery compares with the body GitHub shows and "
    "writes nothing when it is current.",
    "`/interlock pause RUN`, `/interlock resume RUN`, `/interlock retry RUN` and `/interlock cancel RUN` in its "
    "comments, by people with write permission, do what `stop`, `resume`, `retry` and `abandon` do on the run's "
    "own issue; an unknown verb, a run that does not exist, a command the run's state refuses or a person without "
    "the permission gets a reply, and nothing changes.",
    "The state branch's commit of every transition names the event and who sent it (`Abandon by carol (<delivery "
    "id>)`), so `git log interlock/state` says who acted.",
    "The first run of a repository makes the issue with 9 calls more (two compare-and-swap writes of `board.json`, "
    "the search by label, the issue, its pin); afterwards a transition that changes a run's state costs one call "
    "more, the issue's edit (a gate 12 and an approval 7, against 11 and 6 with `board_issue: false`), and one that "
    "changes no run's state costs none (a mission transition: 4 either way; a `/interlock stop` of a run in "
    "flight: 3).",
]
