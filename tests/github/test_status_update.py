"""One status update a transition (issue 16): the check run carries each mission's progress; the status comment and
the pinned board issue are edited only when what a person must do changes (SPEC W5, GH4)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from app.engine.record import Status
from app.github.check_move import move_check
from app.github.checks import check_view, moved_on
from app.github.status import PROGRESS
from app.store.github import GitHubStore
from app.webhooks.checks.run import known_checks
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import graphql_input_problem, mutation_of, repo_node
from tests.github.test_flows import REPO, World


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []


def at_next_mission(world: World) -> int:
    """A run past its gate, its second mission (review) dispatched: the run is working."""
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built")
    world.review(issue, "approved")
    assert world.run(issue).status is Status.RUNNING
    return issue


def test_a_mission_to_mission_transition_updates_the_check_only_and_without_reading_it(world: World) -> None:
    # SPEC W5: the check shows the new stage; the status comment and the board issue are left as they are
    issue = at_next_mission(world)
    comment = int(world.run(issue).links["status_comment"])
    shown = world.fake.comments[comment]["body"]
    assert PROGRESS in shown  # the comment says where the progress is while it is not edited
    before = len(world.fake.calls())
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    calls = world.fake.calls()[before:]
    assert world.run(issue).stage == "build" and world.fake.comments[comment]["body"] == shown
    assert not [call for call in calls if "/issues/" in call]  # no comment, no board issue edit
    assert [call for call in calls if "check-runs" in call] == [f"PATCH /repos/{REPO}/check-runs/9001"]
    assert "at build" in world.fake.check_runs[9001]["output"]["title"]


def test_the_comment_is_edited_when_a_person_must_act(world: World) -> None:
    # SPEC GH4: a gate is something to do: the comment says so at once
    issue = at_next_mission(world)
    comment = int(world.run(issue).links["status_comment"])
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    world.job_done(issue, 3, "build", "built again")
    assert world.run(issue).status is Status.GATE_WAIT
    body = world.fake.comments[comment]["body"]
    assert "**Review the pull request**" in body and PROGRESS not in body


def test_a_check_deleted_behind_the_services_back_is_found_again(world: World) -> None:
    # the remembered check's PATCH answers 404: the check is read and made again; the delivery does not fail
    issue = at_next_mission(world)
    known = known_checks(world.runs())
    (remembered,) = [check for (repo, _), check in known.items() if repo == REPO]
    del world.fake.check_runs[remembered.id]
    before = len(world.fake.calls())
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    calls = [call.split(" ")[0] for call in world.fake.calls()[before:] if "check-runs" in call]
    assert calls == ["PATCH", "GET", "POST"]  # the 404, the read, a new check on the head
    assert "at build" in world.fake.checks_of(f"issue-{issue}")[-1]["output"]["title"]


def test_a_head_moved_by_the_missions_commits_gets_the_check_without_a_read(world: World) -> None:
    # SPEC W5, issue 16: the record's read named the new head; the check goes on there and the one left in
    # progress says where the run went; no check-runs read, no GraphQL read of the branch's checks
    issue = at_next_mission(world)
    (old,) = [check for (repo, _), check in known_checks(world.runs()).items() if repo == REPO]
    world.fake.commit_file(REPO, f"interlock/issue-{issue}", "review.md", "findings\n")
    head = world.fake.refs[(REPO, f"interlock/issue-{issue}")]
    before = len(world.fake.calls())
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    calls = world.fake.calls()[before:]
    # the record's read, the state branch's commit, the dispatch, and one request making the new check and marking
    # the old one (GraphQL's createCheckRun and updateCheckRun together): 3 content-creating requests, not 4
    assert len(calls) == 4 and not [call for call in calls if "check-runs" in call]
    (move,) = [r for r in world.fake.requests[-4:] if b"InterlockMoveCheck" in r.content]
    assert mutation_of(move) == "#createCheckRun"
    newest = world.fake.checks_of(f"issue-{issue}")[-1]
    assert newest["head_sha"] == head and "at build" in newest["output"]["title"]
    left = world.fake.check_runs[old.id]
    assert left["conclusion"] == "neutral" and left["output"]["title"] == f"moved to {head[:7]}"


def moved_head(world: World) -> tuple[int, str]:
    """A run working on its second mission whose job pushed a commit: the run branch's head moved."""
    issue = at_next_mission(world)
    world.fake.commit_file(REPO, f"interlock/issue-{issue}", "review.md", "findings\n")
    return issue, world.fake.refs[(REPO, f"interlock/issue-{issue}")]


def test_a_check_deleted_before_it_is_marked_moved_on_loses_nothing(world: World) -> None:
    # SPEC W5: GitHub answers each mutation of the request on its own; the old check's update fails (it is gone),
    # the new one is made on the head all the same, and the delivery succeeds without another call
    issue, head = moved_head(world)
    (old,) = [check for (repo, _), check in known_checks(world.runs()).items() if repo == REPO]
    del world.fake.check_runs[old.id]
    before = len(world.fake.calls())
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    assert len(world.fake.calls()) - before == 4
    newest = world.fake.checks_of(f"issue-{issue}")[-1]
    assert newest["head_sha"] == head and newest["status"] == "in_progress" and "at build" in newest["output"]["title"]
    assert known_checks(world.runs())[(REPO, f"issue-{issue}")].node == f"CR_{newest['id']}"  # the next one is known


def test_a_refused_move_falls_back_to_reading_and_still_shows_the_check(world: World, monkeypatch: Any) -> None:
    # GitHub refuses the new check in its GraphQL answer (here: a repository id it cannot resolve): the checks are
    # read and the check made on the head the plain way; the delivery does not fail
    issue, head = moved_head(world)
    real = GitHubStore.load

    def unresolvable(store: GitHubStore, run_id: str, also: tuple[str, ...] = ()) -> Any:
        loaded = real(store, run_id, also)
        store.repository_id = "R_gone"
        return loaded

    monkeypatch.setattr(GitHubStore, "load", unresolvable)
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    assert any(b"InterlockMoveCheck" in r.content for r in world.fake.requests[-8:])
    newest = world.fake.checks_of(f"issue-{issue}")[-1]
    assert newest["head_sha"] == head and "at build" in newest["output"]["title"]
    assert world.run(issue).stage == "build"


@pytest.mark.parametrize("status", list(Status))
def test_the_move_sends_only_what_githubs_schema_takes_at_every_status(world: World, status: Status) -> None:
    # the fake refuses an input field or enum value GitHub's GraphQL schema lacks (octokit/graphql-schema):
    # every status's check (conclusion, buttons) goes through in one request, the old one marked moved on
    issue, head = moved_head(world)
    (old,) = [check for (repo, _), check in known_checks(world.runs()).items() if repo == REPO]
    run = world.run(issue)
    runs = world.runs()
    view = check_view(replace(run, status=status), runs.graph_of(run), REPO, str)
    made = move_check(runs.api, repo_node(REPO), head, run.id, view, old.node, moved_on(view, head))
    shown = world.fake.check_runs[made.id]
    assert (shown["status"], shown["conclusion"], shown["head_sha"]) == (view.status, view.conclusion, head)
    assert [a["identifier"] for a in shown["actions"]] == [a.identifier for a in view.actions]
    assert world.fake.check_runs[old.id]["conclusion"] == "neutral"


def test_the_fake_refuses_what_githubs_schema_lacks() -> None:
    # the schema check above could fail: a REST name, a lower-case enum, a missing required field are refused
    good = {"repositoryId": "R_x", "headSha": "a" * 40, "name": "Interlock", "status": "IN_PROGRESS"}
    left = {"repositoryId": "R_x", "checkRunId": "CR_1"}
    assert graphql_input_problem({"made": good, "left": left}) is None
    assert graphql_input_problem({"made": good | {"head_sha": "a"}, "left": left}) is not None
    assert graphql_input_problem({"made": good | {"status": "in_progress"}, "left": left}) is not None
    # CheckStatusState has REQUESTED, the input's RequestableCheckStatusState not (octokit/graphql-schema)
    assert graphql_input_problem({"made": good | {"status": "REQUESTED"}, "left": left}) is not None
    assert graphql_input_problem({"made": good, "left": {"checkRunId": "CR_1"}}) is not None
    assert graphql_input_problem({"made": good | {"output": {"title": "t"}}, "left": left}) is not None


def test_without_the_checks_permission_the_comment_still_shows_each_transition(world: World) -> None:
    # README: "An installation that has not granted the Checks permission gets no check run and runs as before":
    # before issue 16 the status comment showed every transition (SPEC GH4); it is the only status such a run has
    world.fake.fail("GET", "/check-runs", 403, times=1000)
    world.fake.fail("POST", "/check-runs", 403, times=1000)
    issue = at_next_mission(world)
    assert world.fake.checks_of(f"issue-{issue}") == []
    comment = int(world.run(issue).links["status_comment"])
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    assert world.run(issue).stage == "build"
    body = world.fake.comments[comment]["body"]
    assert PROGRESS not in body  # no check run shows the progress
    assert "**stage** `build`" in body  # the comment shows where the run is now


@pytest.mark.parametrize(
    "answer",
    [httpx.Response(200, json={}), httpx.Response(200, text="<html>unicorn</html>")],
    ids=["neither data nor errors", "not json"],
)
def test_an_unreadable_answer_to_the_move_reads_what_github_shows(world: World, answer: httpx.Response) -> None:
    # SPEC W5: an answer that is no GraphQL response (githubkit's model refuses it) says nothing of whether the check
    # was made: the checks are read and the check shown on the head, as for a refused move; no traceback, no 5xx
    issue, head = moved_head(world)
    world.fake._move_check = lambda variables: answer  # type: ignore[method-assign]
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    newest = world.fake.checks_of(f"issue-{issue}")[-1]
    assert newest["head_sha"] == head and "at build" in newest["output"]["title"]
    assert world.run(issue).stage == "build"


def test_a_move_whose_new_check_is_refused_but_old_one_marked_still_ends_with_one_check_on_the_head(
    world: World,
) -> None:
    # SPEC W5: GitHub runs both mutations and answers each on its own; the new check refused, the old one marked
    # moved on all the same: the checks are read and the check made on the head, none left in progress behind
    issue, head = moved_head(world)
    (old,) = [check for (repo, _), check in known_checks(world.runs()).items() if repo == REPO]
    world.fake._graphql_create_check = lambda given: "Something went wrong"  # type: ignore[method-assign]
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    checks = world.fake.checks_of(f"issue-{issue}")
    assert [c["head_sha"] for c in checks if c["status"] == "in_progress"] == [head]
    assert world.fake.check_runs[old.id]["output"]["title"] == f"moved to {head[:7]}"


def test_a_move_refused_for_the_checks_permission_leaves_the_comment_to_show_the_transition(world: World) -> None:
    # the permission withdrawn while a run works: GitHub refuses both mutations with FORBIDDEN (GraphQL answers
    # 200); as for REST's 403, the delivery succeeds and the status comment shows where the run is now
    issue, _ = moved_head(world)
    refused = {"type": "FORBIDDEN", "message": "Resource not accessible by integration"}
    errors = [refused | {"path": [alias]} for alias in ("made", "left")]
    answer = httpx.Response(200, json={"data": {"made": None, "left": None}, "errors": errors})
    world.fake._move_check = lambda variables: answer  # type: ignore[method-assign]
    world.fake.fail("GET", "/check-runs", 403, times=1000)
    world.fake.fail("POST", "/check-runs", 403, times=1000)
    comment = int(world.run(issue).links["status_comment"])
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    assert world.run(issue).stage == "build"
    assert "**stage** `build`" in world.fake.comments[comment]["body"]


def test_an_unreadable_answer_to_the_branch_checks_read_reads_the_head_the_plain_way(world: World) -> None:
    # the read of the branch's checks answered 200 with no GraphQL response: as when GitHub refuses it, the head is
    # read the plain way and the check made there; the delivery does not fail on pydantic's ValidationError
    issue, head = moved_head(world)
    known_checks(world.runs()).clear()  # another process's transition: the checks are read
    world.fake._branch_checks = lambda variables: httpx.Response(200, json={})  # type: ignore[method-assign]
    world.job_done(issue, 2, "review", "VERDICT: FAIL")
    newest = world.fake.checks_of(f"issue-{issue}")[-1]
    assert newest["head_sha"] == head and "at build" in newest["output"]["title"]
