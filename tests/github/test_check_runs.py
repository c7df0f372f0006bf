"""The run's check run (SPEC W5) against the stand-in GitHub: what it shows from start to each end, on which
commit, how often it is written, and what a click on one of its buttons does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from app.engine.record import Reason, ReasonCode, Status
from app.github.checks import SUMMARY_LIMIT, check_view, conclusion_of, offered
from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, example
from tests.helpers import ROOT, doc


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []  # every call matches GitHub's REST description


def checks(world: World, run_id: str = "issue-1") -> list[dict[str, Any]]:
    return world.fake.checks_of(run_id)


def check_calls(world: World) -> list[str]:
    return [call for call in world.fake.calls() if "check-runs" in call]


def click(world: World, identifier: str, user: str = "alice", check: dict[str, Any] | None = None) -> Outcome:
    """A person clicks a button of the run's newest check run (or of ``check``)."""
    world.count += 1
    return world.router.dispatch(clicked_on(check or checks(world)[-1], world, identifier, user))


def clicked_on(shown: dict[str, Any], world: World, identifier: str, user: str = "alice") -> Delivery:
    """GitHub's ``check_run.requested_action`` for a click on ``shown``, as a delivery with its own id."""
    payload = example("check_run", "requested_action.payload.json")
    payload["check_run"] = {
        **payload["check_run"],
        "id": shown["id"],
        "name": shown["name"],
        "external_id": shown["external_id"],
        "head_sha": shown["head_sha"],
        "app": {**payload["check_run"]["app"], "id": int(world.app.identity.app_id)},
    }
    payload["check_run"]["check_suite"] = {**payload["check_run"]["check_suite"], "head_branch": "interlock/issue-1"}
    payload["requested_action"] = {"identifier": identifier}
    payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
    return Delivery("check_run", f"delivery-{world.count}", payload)


def test_the_check_follows_a_run_from_start_through_its_gate_to_the_merge(world: World) -> None:
    # SPEC W5: in progress while it works, action_required at the gate, success at the end, on the branch's head
    _, issue = world.label()
    run = world.run(issue)
    head = world.fake.refs[(REPO, run.branch)]
    [started] = checks(world)
    assert (started["name"], started["head_sha"], started["status"]) == ("Interlock", head, "in_progress")
    summary = started["output"]["summary"]
    assert "**stage** `build`" in summary and "**Visits** `build` 1" in summary and "```mermaid" in summary
    assert "**Budget used** 1 attempt, 1 call, 1 unit" in summary  # issue 28, part 7: never "1 units"
    assert "**Now**: Nothing: the run is working." in summary
    world.job_done(issue, 1, "build", "built it")
    [gate] = checks(world)
    assert (gate["status"], gate["conclusion"]) == ("completed", "action_required")
    # issue 28, part 5: the link is on the API's web host (the stand-in answers at http://github.test/api/v3, as a
    # GitHub Enterprise Server at https://HOST/api/v3), never a hard-coded github.com
    assert gate["details_url"] == f"http://github.test/{REPO}/issues/{issue}" and gate["actions"] == []
    world.review(issue, "approved")
    assert [c["status"] for c in checks(world)] == ["completed", "in_progress"]  # the newest shows it working
    world.job_done(issue, 2, "review", "fine\nVERDICT: PASS")
    assert world.run(issue).status is Status.AWAITING_MERGE
    assert [(c["conclusion"], c["head_sha"]) for c in checks(world)] == [("action_required", head), ("success", head)]
    merged = example("pull_request", "closed.payload.json")
    pull = merged["pull_request"]
    merged["pull_request"] = {**pull, "merged": True, "head": {**pull["head"], "ref": run.branch}}
    world.deliver("pull_request", merged)
    assert world.run(issue).status is Status.DONE and checks(world)[-1]["conclusion"] == "success"
    assert len(checks(world)) == 2


def test_a_failed_mission_fails_the_check_and_offers_its_decisions_as_buttons(world: World) -> None:
    # SPEC W5, E1: failure, with retry and abandon as buttons (GitHub's limits: 3, 20 and 40 characters)
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)
    [failed] = checks(world)
    assert (failed["status"], failed["conclusion"]) == ("completed", "failure")
    assert [a["identifier"] for a in failed["actions"]] == ["retry", "abandon"]
    assert "without storing a mission record" in failed["output"]["summary"]


def test_cancelled_when_the_run_is_abandoned(world: World) -> None:
    _, issue = world.label()
    world.comment(issue, "/interlock abandon")
    assert [(c["status"], c["conclusion"]) for c in checks(world)] == [("completed", "cancelled")]


def test_a_stopped_run_asks_for_action_and_offers_resume(world: World) -> None:
    # SPEC W5: interrupted on request is a person's to resume
    _, issue = world.label()
    world.comment(issue, "/interlock stop")
    world.job_done(issue, 1, "build", "built it")
    assert world.run(issue).status is Status.INTERRUPTED
    [stopped] = checks(world)
    assert stopped["conclusion"] == "action_required"
    assert [a["identifier"] for a in stopped["actions"]] == ["resume", "abandon"]


def test_a_head_that_moves_gets_a_new_check_run(world: World) -> None:
    # SPEC W5: checks attach to commits; a mission's commit moves the run branch, and the check goes with it
    _, issue = world.label()
    run = world.run(issue)
    first = world.fake.refs[(REPO, run.branch)]
    world.fake.commit_file(REPO, run.branch, "app.py", "print('built')\n")  # the job pushed the agent's commit
    world.job_done(issue, 1, "build", "built it")
    moved = world.fake.refs[(REPO, run.branch)]
    left, now = checks(world)
    assert (left["head_sha"], now["head_sha"], now["conclusion"]) == (first, moved, "action_required")
    # the check the run left on the earlier commit is no longer in progress: it says where the run went
    assert (left["conclusion"], left["output"]["title"]) == ("neutral", f"moved to {moved[:7]}")


def test_a_redelivery_makes_no_second_check_run_and_no_write(world: World) -> None:
    # SPEC W5, GH8: found again on the head; what it shows did not change, so nothing is written
    _, issue = world.label()
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    world.deliver("issues", payload, delivery="delivery-1")  # the start's own delivery id, again
    assert len(checks(world)) == 1
    before = len(check_calls(world))
    world.comment(issue, "/interlock stop")  # a stop requested shows nowhere on the check but its anchor
    # issue 16 (changed on purpose): the service remembers its check on the unmoved head: no read either; SPEC J6
    # (changed on purpose, issue 28 part 6): the check anchors the chain's head at every transition, one PATCH
    assert [call.split(" ")[0] for call in check_calls(world)[before:]] == ["PATCH"]


def test_a_button_runs_its_command_as_the_person_who_clicked(world: World) -> None:
    # SPEC W5, GH7: with write permission, the button is the comment command, journaled with who
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)
    assert click(world, "retry") is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.RUNNING and len(world.fake.dispatches) == 2
    assert checks(world)[-1]["status"] == "in_progress"
    world.job_done(issue, 2, "build", "", store_record=False)
    assert click(world, "abandon") is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.CANCELLED and {"delivery-3", "delivery-5"} <= set(run.applied)  # each click's event
    assert checks(world)[-1]["conclusion"] == "cancelled"


def test_a_button_is_refused_without_permission_or_when_not_offered(world: World) -> None:
    # SPEC W5, GH9: nothing changes, the issue is told why, and the delivery never fails
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)
    version = world.run(issue).version
    assert click(world, "retry", user="mallory") is Outcome.HANDLED
    assert click(world, "approve") is Outcome.HANDLED
    assert click(world, "deliver") is Outcome.HANDLED  # offered at an escalation, not after a failed mission
    assert world.run(issue).version == version and len(world.fake.dispatches) == 1
    said = [c["body"] for c in world.fake.comments.values()]
    refused = "@mallory only people with write permission can steer Interlock runs; nothing changed."
    assert any(refused in b for b in said)
    assert any("`approve` is not an action the check run of `issue-1` offers while it is failed" in b for b in said)


def test_a_check_run_that_is_not_the_runs_is_ignored(world: World) -> None:
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)
    mine = checks(world)[-1]
    version = world.run(issue).version
    assert click(world, "retry", check={**mine, "external_id": "issue-99"}) is Outcome.IGNORED
    assert click(world, "retry", check={**mine, "name": "lint"}) is Outcome.IGNORED
    assert world.run(issue).version == version


def test_an_installation_without_the_checks_permission_still_runs(world: World) -> None:
    # an App installed before it asked for Checks: GitHub answers 403, the run goes on without its check
    world.fake.fail("GET", "/check-runs", 403, times=5)
    outcome, issue = world.label()
    assert outcome is Outcome.HANDLED and world.run(issue).status is Status.RUNNING and checks(world) == []


def test_a_refused_history_query_still_puts_the_check_on_the_head(world: World, monkeypatch: Any) -> None:
    # the GraphQL read of the branch's history is refused (GitHub answers errors): the head is read by REST
    monkeypatch.setattr(
        world.fake, "_branch_checks", lambda variables: httpx.Response(200, json={"errors": [{"message": "x"}]})
    )
    _, issue = world.label()
    [check] = checks(world)
    assert check["head_sha"] == world.fake.refs[(REPO, world.run(issue).branch)]


def test_a_redelivered_click_changes_nothing(world: World) -> None:
    # SPEC GH8: the delivery id is the event's key
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)
    world.count += 1
    clicked = clicked_on(checks(world)[-1], world, "retry")
    assert world.router.dispatch(clicked) is Outcome.HANDLED and world.run(issue).status is Status.RUNNING
    version, dispatched = world.run(issue).version, len(world.fake.dispatches)
    assert dispatched == 2
    assert world.router.dispatch(clicked) is Outcome.HANDLED
    assert world.run(issue).version == version and len(world.fake.dispatches) == dispatched
    assert not any("nothing changed" in c["body"] for c in world.fake.comments.values())  # and says nothing


EXPECTED = {
    Status.RUNNING: (None, []),
    Status.AWAITING_UPSTREAM: (None, []),
    Status.GATE_WAIT: ("action_required", []),
    Status.AWAITING_INPUT: ("action_required", []),
    Status.INTERRUPTED: ("action_required", ["resume", "abandon"]),
    Status.AWAITING_MERGE: ("success", []),
    Status.DONE: ("success", []),
    Status.FAILED: ("failure", ["retry", "abandon"]),
    Status.ESCALATED: ("failure", ["resume", "deliver", "abandon"]),
    Status.CANCELLED: ("cancelled", []),
}


def test_each_status_has_the_conclusion_and_buttons_the_readme_names() -> None:
    # SPEC W5: a gate's decision is its review and a question's answer is text: no buttons there
    assert {s: (conclusion_of(s), [a.identifier for a in offered(s)]) for s in Status} == EXPECTED


@pytest.mark.parametrize("status", list(Status))
def test_every_status_has_a_conclusion_and_buttons_within_githubs_limits(status: Status) -> None:
    actions = offered(status)
    assert len(actions) <= 3
    assert all(len(a.label) <= 20 and len(a.identifier) <= 20 and len(a.description) <= 40 for a in actions)
    assert all(a.command == f"/interlock {a.identifier}" for a in actions)
    live = status in (Status.RUNNING, Status.AWAITING_UPSTREAM)
    assert (conclusion_of(status) is None) == live


def test_a_summary_longer_than_github_allows_is_cut(world: World) -> None:
    _, issue = world.label()
    run = world.run(issue)
    long = replace(run, reason=Reason(code=ReasonCode.MISSION_FAILED, stage="build", message="x" * 70_000))
    view = check_view(long, world.runs().graph_of(run), REPO, str)
    assert len(view.summary) <= SUMMARY_LIMIT and view.summary.endswith("65535 bytes)")


def test_the_readme_says_what_the_check_run_shows() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("github/app.md", "operating/service.md", "operating/check-runs.md", "benchmarks.md").split())
    for sentence in README_SENTENCES:
        assert sentence in text, sentence


README_SENTENCES = [
    "Each run has a check run named `Interlock` on the head commit of its run branch, which is its pull "
    "request's head once there is one, so a run's state shows where reviewers look, even if every comment is hidden.",
    "While the run works it is `in_progress`; when it stops it completes with a conclusion: `action_required` at a "
    "gate, a question or a stop on request, `success` once the run reached its end (the pull request awaits its "
    "merge, and stays so when the run is `done`), `failure` when it failed or escalated, `cancelled` when cancelled.",
    "Its summary shows the status, the stage, the visits of each stage, the budget used, what a person must do "
    "now and the graph's picture, and its details link is the run's issue.",
    "When a mission's commits move the head, the run's check goes on the new head (checks belong to commits), and "
    "the one it left in progress on an earlier commit (among the branch's last 30) completes as `neutral`, naming "
    "the new head; when a run that stopped goes on, a new check shows it working, since a pull request shows the "
    "newest.",
    "The check is found again on GitHub (the head's `Interlock` check runs whose external id is the run's), so a "
    "redelivery never makes a second one, and it is written only when what it shows changed.",
    "At a failure its buttons are **Retry** and **Abandon**, at an escalation **Resume**, **Deliver** and "
    "**Abandon**, after a stop **Resume** and **Abandon**; a gate has none (its decision is the review), nor "
    "a question (its answer is text).",
    "A click runs the comment command of the same name as the person who clicked, who needs the configured "
    "permission as for a comment; a button the run does not offer now, or a clicker without the permission, is "
    "told so on the issue and nothing changes.",
    "An installation that has not granted the Checks permission gets no check run and runs as before.",
    "`check_run.requested_action` on a run's `Interlock` check | a button of the run's check run clicked",
    # the figures of tests/bench/bench_github.py, checked by test_the_call_figures_of_the_readme_are_measured
    "A mission transition costs 4 API calls (one GraphQL read of the record, the job's mission record and the run "
    "branch's head at the same commit; one GraphQL `createCommitOnBranch` that writes the state branch; the "
    "dispatch; the check run's update), 3 of which create content, when the mission's job pushed no commit.",
    "GitHub allows an App 500 content-creating requests an hour and 80 a minute: the hourly quota binds first, at "
    "about 166 mission transitions an hour per installation (1,600 under the 80 a minute, 1,250 under the 5,000 "
    "requests an hour).",
    "A job that pushed commits moves the run branch's head, and the check run follows the head: that transition "
    "costs the same 4 calls, 3 of which create content, since one GraphQL request makes the new check run at the new "
    "head (which the record's read named) and marks the old one as moved on (`createCheckRun` and `updateCheckRun` "
    "together). GitHub counts content-creating requests; if it counted each mutation of a request, that transition "
    "would be 4 content-creating, about 125 an hour.",
    "Starting a run costs 19 (two of them read whether its team is stopped, before and after the start; the first run "
    "of a repository 30, as it makes the board issue), a gate 12 and an approval that dispatches the next mission 7.",
    "With `board_issue: false` a mission transition costs the same 4 calls, a gate 11 and an approval 6.",
    "| 4 (one GraphQL read; `createCommitOnBranch`, the dispatch and the check run's update create content) when the "
    "job pushed no commit, the board issue on or off; the same 4 and 3 when it pushed one, as a mission that changes "
    "files does (the check run moved to the new head in one GraphQL request carrying two mutations); an approval "
    "that dispatches the next mission 7 (5 creating content), a gate 12 (8), a run's start 19 (9) |",
    "| ≤ 4, ≤ 3 creating content (issue 16): met, with a push or without; GitHub's 500 content-creating "
    "requests an hour bind first: ~166 mission transitions an hour per installation (1,600 under 80 a minute, "
    "1,250 under the 5,000 requests an hour); "
    "before: 9 calls, 7 creating content, ~71 an hour |",
    # issue 16: the status comment is edited only when what a person must do changes (test_status_update.py)
    "a transition from a working run to a working run leaves it as it is, and it says meanwhile that the progress is "
    "on the run's `Interlock` check run, which every transition updates.",
    "permissions Contents (write), Issues (write), Pull requests (write), Actions (write), Checks (write) and Metadata "
    "(read), and subscribes to `issues`, `issue_comment`, `pull_request`, `pull_request_review`, `workflow_run` and "
    "`check_run`.",
]


def test_the_call_figures_of_the_readme_are_measured() -> None:
    # the README's figures are what `python -m tests.bench.bench_github` prints (a fresh process: no warm caches)
    bench = [sys.executable, "-m", "tests.bench.bench_github"]
    result = subprocess.run(bench, capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    counts = {line[:46].strip(): line[46:].split()[:4] for line in result.stdout.splitlines()[1:7]}
    assert counts["issue labelled: run started"] == ["30", "16", "14", "14"]  # the first run makes the board issue
    assert counts["a later run started (board issue exists)"] == ["19", "10", "9", "9"]
    assert counts["job completed: mission -> gate (PR opened)"] == ["12", "4", "8", "8"]
    assert counts["review approved: gate -> next mission"] == ["7", "2", "5", "5"]
    assert counts["job completed: mission -> FAIL -> mission"] == ["4", "1", "3", "3"]  # issue 16: <= 4, <= 3
    assert (
        "mission transition: 4 calls, 1 reads, 3 writes, 3 content-creating (target <= 4 calls, <= 3 "
        "content-creating): OK; mission transitions an hour per installation: 166 under 500 content-creating "
        "requests an hour; 1,250 under 5,000 requests an hour; 1,600 under 80 content-creating requests a minute; "
        "the limit that binds: 500 content-creating requests an hour"
    ) in result.stdout
    assert (  # a job that pushed a commit: the check run follows the new head, in one request (issue 16)
        "mission transition (the job pushed a commit): 4 calls, 1 reads, 3 writes, 3 content-creating (target <= 4 "
        "calls, <= 3 content-creating): OK; mission transitions an hour per installation: 166 under 500 "
        "content-creating requests an hour"
    ) in result.stdout
    assert "counted by mutation this would be 4 content-creating" in result.stdout
