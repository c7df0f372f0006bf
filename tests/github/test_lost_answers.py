# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""No duplicate from a lost answer (issue 28 part 4; SPEC GH8, J2): GitHub makes what the App asked for and its
answer never comes back (``LOST``: a timeout after the fact). Whether the delivery then goes on (the thing is
found at once) or fails (its redelivery finds it), each create happens once: the request issue, the board
issue, the supervision issue, a comment, the run's pull request, a satellite's, the check run, the job."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from app.engine.record import Status
from app.webhooks.router import Outcome
from app.webhooks.teams.requests import request_body
from tests.github.fake_github import LOST
from tests.github.test_board_issue import board_issues, label
from tests.github.test_flows import REPO, World, merged_payload, review_job, world  # noqa: F401 - fixture
from tests.github.test_requests import LIB, asks_upstream, two_repositories
from tests.github.test_satellites import DOCS, build_done, pulls
from tests.github.test_satellites import setup as satellites_setup
from tests.github.test_supervision import ENDED, TEAMS, supervision_issues
from tests.github.test_team_queue import configure, label_payload, run_of


def twice(deliver: Callable[[], Outcome]) -> None:
    """The delivery, and — if the lost answer failed it — its redelivery, as the service's queue sends it."""
    try:
        deliver()
    except Exception as exc:  # the redelivery below must recover it
        assert "lost answer" in repr(exc) or "lost answer" in str(exc.__cause__), exc
        deliver()


def made(world: World, method: str, part: str) -> int:
    """How many requests of ``method`` whose path contains ``part`` reached the stand-in GitHub."""
    return sum(1 for call in world.fake.calls(method) if part in call)


def test_a_request_issue_whose_answer_is_lost_is_filed_once(world: World) -> None:
    # SPEC U3, GH8: the issue is made in octo/lib and the answer is lost; the delivery finds it by its marker's key
    two_repositories(world)
    world.label()
    world.fake.fail("POST", f"/repos/{LIB}/issues", LOST)
    assert asks_upstream(world, "end-1") is Outcome.HANDLED
    filed = [issue for issue in world.fake.filed if issue["repo"] == LIB]
    run = world.run(1)
    assert len(filed) == 1 and run.links["upstream"] == f"{LIB}#{filed[0]['number']}"
    assert f"key={run.id}/request/1 -->" in filed[0]["body"] and run.status is Status.AWAITING_UPSTREAM


def test_a_request_filed_before_a_crash_is_found_by_the_redelivery(world: World) -> None:
    # SPEC GH8: the answer is lost and the search that follows fails too (GitHub down): the delivery fails; its
    # redelivery searches before it files, and finds the issue the lost answer made
    two_repositories(world)
    world.label()
    world.fake.fail("POST", f"/repos/{LIB}/issues", LOST)
    world.fake.fail("GET", f"/repos/{LIB}/issues", 502, times=10, after=1)  # the search before filing passes
    with pytest.raises(Exception, match="502"):
        asks_upstream(world, "end-1")
    world.fake.faults.clear()
    assert asks_upstream(world, "end-1") is Outcome.HANDLED
    assert len([issue for issue in world.fake.filed if issue["repo"] == LIB]) == 1
    assert world.run(1).upstream.id is not None


def test_an_issue_someone_else_opened_with_the_marker_is_not_taken_for_the_request(world: World) -> None:
    # SPEC GH9: a copied trailer with the very key, in an issue a person opened, is no request the App filed
    two_repositories(world)
    world.label()
    real = world.fake._list_issues

    def with_a_forgery(request: Any, body: Any, repo: str) -> Any:
        answer = real(request, body, repo)
        forged = {"number": 999, "title": "x", "body": "", "state": "open", "labels": []}
        trailer = "_Filed by Interlock for run `issue-1` of octo/app#1._\n"
        forged["body"] = trailer + "<!-- interlock:upstream run=issue-1 repo=octo/app key=issue-1/request/1 -->"
        forged["user"] = {"login": "mallory", "type": "User"}
        answer._content = json.dumps([forged, *answer.json()]).encode()
        return answer

    index = next(i for i, route in enumerate(world.fake.routes) if route[2] == real)
    world.fake.routes[index] = (*world.fake.routes[index][:2], with_a_forgery)
    asks_upstream(world, "end-1")
    assert world.run(1).links["upstream"] != f"{LIB}#999"
    assert len([issue for issue in world.fake.filed if issue["repo"] == LIB]) == 1


def test_a_comment_whose_answer_is_lost_is_posted_once(world: World) -> None:
    # SPEC GH8: the question's comment is made, its answer lost: the App finds it by its text, posts no second
    _, issue = world.label()
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "Which database?\nVERDICT: NEEDS_INPUT"}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0001-build.json", json.dumps(record))
    world.fake.fail("POST", f"/issues/{issue}/comments", LOST)
    twice(lambda: world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1"))
    questions = [c for c in world.fake.comments.values() if "needs an answer from a person" in c["body"]]
    assert len(questions) == 1 and world.run(issue).status is Status.AWAITING_INPUT


def test_a_reply_without_a_mark_whose_answer_is_lost_is_posted_once(world: World) -> None:
    # SPEC GH7, GH8: a refusal to someone without permission carries no mark: found by its text all the same
    _, issue = world.label()
    world.fake.fail("POST", f"/issues/{issue}/comments", LOST)
    world.comment(issue, "/interlock stop", user="mallory", delivery="stop-1")
    replies = [c for c in world.fake.comments.values() if c["body"].startswith("@mallory")]
    assert len(replies) == 1, replies


def test_a_502_on_a_create_is_not_sent_again_by_the_client(world: World) -> None:
    # SPEC GH8: githubkit retried a 5xx three times, and GitHub may answer 502 after making the comment; a create
    # is sent once, then looked for. A read is still retried
    _, issue = world.label()
    before = made(world, "POST", f"/issues/{issue}/comments")
    world.fake.fail("POST", f"/issues/{issue}/comments", 502)
    with pytest.raises(Exception, match="502"):
        world.runs().api.comment(REPO, issue, "hello")  # the stand-in's 502 made nothing: nothing to find
    assert made(world, "POST", f"/issues/{issue}/comments") - before == 1
    labels = world.runs().api.labels(REPO, issue)
    world.fake.fail("GET", f"/repos/{REPO}/issues/{issue}/labels", 502)
    assert world.runs().api.labels(REPO, issue) == labels  # retried, and read


def test_a_pull_request_whose_answer_is_lost_is_opened_once(world: World) -> None:
    # SPEC GH5, GH8: the gate's pull request is made, its answer lost: GitHub refuses a second one (422) and the
    # open one is linked to the run
    _, issue = world.label()
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "built", "commits": 1}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0001-build.json", json.dumps(record))
    world.fake.fail("POST", f"/repos/{REPO}/pulls", LOST)
    twice(lambda: world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1"))
    assert len(world.fake.pulls) == 1 and world.run(issue).links["pr"] == str(next(iter(world.fake.pulls)))
    assert world.fake.pulls[int(world.run(issue).links["pr"])]["reviewers"] == ["carol"]


def test_a_satellites_pull_request_whose_answer_is_lost_is_opened_once_and_linked(world: World) -> None:
    # SPEC U7, GH8: the satellite's pull request is made, its answer lost: found by its branch, linked to the run
    issue = satellites_setup(world)
    world.fake.fail("POST", f"/repos/{DOCS}/pulls", LOST)
    twice(lambda: build_done(world, issue))
    found = pulls(world)
    assert [pull["repo"] for pull in world.fake.pulls.values()].count(DOCS) == 1
    assert world.run(issue).links[f"pr:{DOCS}"] == str(found[DOCS][0])


def test_a_satellite_pull_request_lost_with_the_delivery_is_opened_by_the_redelivery(world: World) -> None:
    # SPEC U7, GH8: the main pull request is linked, the satellite's create fails and the delivery with it: the
    # redelivery, which sees the main one done, still opens the satellite's (before: never)
    issue = satellites_setup(world)
    world.fake.fail("POST", f"/repos/{DOCS}/pulls", 0)  # timed out before GitHub acted: nothing made
    world.fake.commit_file(DOCS, f"interlock/issue-{issue}", "guide.md", "# new guide")
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "Done.\nVERDICT: PASS", "commits": 0}
    record["satellites"] = {DOCS: {"base": "a" * 40, "head": "b" * 40, "commits": 1}}
    with pytest.raises(Exception, match="timeout"):
        world.job_done(issue, 1, "build", "", record=json.dumps(record), delivery="build-1")
    assert f"pr:{DOCS}" not in world.run(issue).links
    world.fake.faults.clear()
    world.job_done(issue, 1, "build", "", record=json.dumps(record), delivery="build-1")
    assert world.run(issue).links[f"pr:{DOCS}"] == str(pulls(world)[DOCS][0])


def test_a_check_run_whose_answer_is_lost_is_made_once(world: World) -> None:
    # SPEC W5, GH8: the run's check is made, its answer lost; the redelivery finds it by the run's external id
    world.fake.fail("POST", f"/repos/{REPO}/check-runs", LOST)
    twice(lambda: label(world, 1, "start-1"))
    assert [check["external_id"] for check in world.fake.check_runs.values()] == ["issue-1"]
    world.job_done(1, 1, "build", "built it")  # the next transition: shown on the one check, or a moved head's
    heads = [check["head_sha"] for check in world.fake.check_runs.values()]
    assert len(heads) == len(set(heads)), "one check per head"


def test_a_dispatch_whose_answer_is_lost_runs_one_job(world: World) -> None:
    # SPEC GH3, GH8: the job is dispatched and the answer lost: the redelivery finds it listed, sends no second
    world.fake.fail("POST", "/dispatches", LOST)
    twice(lambda: label(world, 1, "start-1"))
    assert [d["inputs"]["mission"] for d in world.fake.dispatches] == ["1"]


def test_a_board_issue_whose_answer_is_lost_is_made_once(world: World) -> None:
    # SPEC W1, GH8: the board issue is made, its answer lost: the redelivery finds it by its label and marker
    world.fake.fail("POST", f"/repos/{REPO}/issues", LOST)
    twice(lambda: label(world, 1, "start-1"))
    assert len(board_issues(world)) == 1


def test_a_supervision_issue_whose_answer_is_lost_is_opened_once(world: World) -> None:
    # SPEC U6, GH8: the supervision issue is made, its answer lost: the redelivery finds it by its marker
    world.fake.issue_numbers_from[REPO] = 1
    configure(world, TEAMS.format(n=1))
    world.deliver("issues", label_payload(ENDED))
    world.job_done(ENDED, 1, "build", "Built the greeting.\nVERDICT: PASS")
    world.review(ENDED, "approved")
    world.job_done(ENDED, 2, "review", "Looks right.\nVERDICT: PASS")
    world.fake.fail("POST", f"/repos/{REPO}/issues", LOST)
    twice(lambda: world.deliver("pull_request", merged_payload(f"interlock/issue-{ENDED}"), delivery="merged"))
    assert run_of(world, ENDED).status is Status.DONE
    assert len(supervision_issues(world)) == 1 and run_of(world, 1).supervision


def test_an_issue_of_thousands_of_comments_still_shows_a_posted_comment_to_the_redelivery(world: World) -> None:
    # SPEC GH8: a busy issue has 1,200 comments from before the run; the question was posted and the delivery
    # failed after it (the status comment's edit). The redelivery reads the comments since the run began, so it
    # sees the question's mark (before: only the oldest 1,000 were read, and it was posted again)
    _, issue = world.label()
    for n in range(1200):
        world.fake.comments[n - 1200] = {
            "repo": REPO,
            "issue": issue,
            "body": f"+1 ({n})",
            "updated_at": "2018-01-01T00:00:00Z",
        }
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "Which database?\nVERDICT: NEEDS_INPUT"}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0001-build.json", json.dumps(record))
    world.fake.fail("PATCH", "/issues/comments/", 502, times=10)
    with pytest.raises(Exception, match="502"):
        world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1")
    world.fake.faults.clear()
    assert world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1") is Outcome.HANDLED
    questions = [c for c in world.fake.comments.values() if "needs an answer from a person" in c["body"]]
    assert len(questions) == 1


def test_a_request_of_another_repositorys_run_of_the_same_id_is_not_taken_for_this_ones(world: World) -> None:
    # SPEC U3, GH9 (hostile review): octo/web's run `issue-1` filed a request in octo/lib with the same key; run
    # ids are per repository, so the marker's repository must be this one too, and octo/app files its own
    two_repositories(world)
    world.label()
    body = request_body(world.run(1), "octo/web", 1, "web needs a lib change", "", None, "issue-1/request/1")
    theirs = world.runs().api.create_issue(LIB, "web's request", body, ["request:open"])
    asks_upstream(world, "end-1")
    assert world.run(1).links["upstream"] != f"{LIB}#{theirs['number']}"
    assert len([issue for issue in world.fake.filed if issue["repo"] == LIB]) == 2


def test_a_persons_comment_of_the_same_words_is_never_taken_for_the_apps(world: World) -> None:
    # SPEC GH8 (hostile review): someone posts the App's predictable words; a failed post of them is not "found"
    _, issue = world.label()
    text = "Interlock is starting run `issue-9` on `default`…"
    world.fake.comments[4242] = {"repo": REPO, "issue": issue, "body": text, "user": "mallory"}
    world.fake.fail("POST", f"/issues/{issue}/comments", 502)  # GitHub made nothing
    with pytest.raises(Exception, match="502"):
        world.runs().api.comment(REPO, issue, text)


def test_a_check_run_made_through_graphql_is_not_sent_again_on_a_5xx(world: World) -> None:
    # SPEC W5, GH8 (hostile review): the check moved to a new head is made by GraphQL's createCheckRun
    # (app/github/check_move.py), a POST /graphql: sent once, as every request that makes something
    from app.github import check_move
    from app.github.checks import CheckView

    world.fake.fail("POST", "createCheckRun", 502, times=10)
    before = len(world.fake.calls("POST"))
    view = CheckView("in_progress", "t", "s", "https://x.test", ())
    with pytest.raises(Exception, match="502"):
        check_move.move_check(world.runs().api, "R_1", "a" * 40, "issue-1", view, "CR_1", view)
    assert len([call for call in world.fake.calls("POST")[before:] if call.endswith("/graphql")]) == 1
