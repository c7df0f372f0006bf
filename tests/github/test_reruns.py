"""An issue runs again after its run ended, on a new run id and branch, and a start that cannot be made is refused
with the fix on the issue (SPEC GH1, GH2, GH8; issue 11, item 6)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.record import Status
from app.webhooks.router import Outcome
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import mutation_of
from tests.github.test_flows import (
    DISPATCHED,
    REPO,
    World,
    example,
    merged_payload,
    retry_waits,  # noqa: F401  (autouse: githubkit retries without waiting)
    writes,
)
from tests.helpers import doc
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []  # every request matches GitHub's REST description


def label_payload(user: str = "alice") -> dict[str, Any]:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
    return payload


def job_of(world: World, run_id: str, seq: int, stage: str, answer: str) -> Outcome:
    """The end of a mission job of run ``run_id``, with the mission record the job stored."""
    record = {"seq": seq, "stage": stage, "status": "done", "answer": answer, "commits": 1}
    world.fake.commit_file(
        REPO, "interlock/state", f"runs/{run_id}/missions/{seq:04d}-{stage}.json", json.dumps(record)
    )
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        **DISPATCHED,
        "display_title": f"interlock {run_id} mission {seq} ({stage})",
        "conclusion": "success",
        "head_branch": f"interlock/{run_id}",
    }
    return world.deliver("workflow_run", payload)


def review_of(world: World, branch: str) -> Outcome:
    payload = example("pull_request_review", "submitted.payload.json")
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": branch}
    review = {"state": "approved", "body": "", "user": {"login": "carol"}, "submitted_at": "2099-01-01T00:00:00Z"}
    payload["review"] = {**payload["review"], **review}
    return world.deliver("pull_request_review", payload)


def end_by_abandon(world: World, issue: int, run_id: str) -> None:
    world.comment(issue, "/interlock abandon")


def end_by_merge(world: World, issue: int, run_id: str) -> None:
    job_of(world, run_id, 1, "build", "built it")  # the gate: its pull request is opened
    review_of(world, f"interlock/{run_id}")
    job_of(world, run_id, 2, "review", "VERDICT: PASS")
    world.deliver("pull_request", merged_payload(f"interlock/{run_id}"))


@pytest.mark.parametrize(("end", "ended"), [(end_by_abandon, Status.CANCELLED), (end_by_merge, Status.DONE)])
def test_a_label_after_the_run_ended_starts_a_new_run_on_a_new_branch(world: World, end: Any, ended: Status) -> None:
    # SPEC GH1, GH2: a run that ended keeps its id, branch and record; labelling the issue again starts the next
    _, issue = world.label()
    end(world, issue, f"issue-{issue}")
    first = world.runs().store.load(f"issue-{issue}")
    assert first.status is ended
    assert world.label()[0] is Outcome.HANDLED
    second = world.runs().store.load(f"issue-{issue}-2")
    assert (second.status, second.branch, second.base) == (Status.RUNNING, f"interlock/issue-{issue}-2", "develop")
    start = world.fake.commits[world.fake.refs[(REPO, second.branch)]]
    assert start["parents"] == [world.fake.refs[(REPO, "develop")]]  # a fresh branch from the base
    assert world.fake.dispatches[-1]["ref"] == second.branch and world.fake.dispatches[-1]["inputs"]["run"] == second.id
    assert world.runs().store.load(f"issue-{issue}").version == first.version  # the ended run is left as it was
    assert world.fake.labels[(REPO, issue)] == ["interlock:running"]  # the issue shows the new run's state
    # SPEC GH1: one live run per issue still
    assert world.label()[0] is Outcome.IGNORED and world.runs().store.find(f"issue-{issue}-3") is None
    # a command on the issue reaches its latest run
    world.comment(issue, "/interlock stop")
    assert world.runs().store.load(f"issue-{issue}-2").stop_requested
    assert world.runs().store.load(f"issue-{issue}").version == first.version


def test_the_new_runs_job_and_pull_request_map_to_it_and_a_third_run_follows(world: World) -> None:
    # SPEC GH3, GH5, GH6: a job title and a pull request's branch name the run; `interlock/issue-N-2` is run
    # `issue-N-2`; and after it ended too, the next label starts `issue-N-3`
    _, issue = world.label()
    world.comment(issue, "/interlock abandon")
    world.label()
    second = f"issue-{issue}-2"
    assert job_of(world, second, 1, "build", "built it") is Outcome.HANDLED
    run = world.runs().store.load(second)
    assert run.status is Status.GATE_WAIT and world.fake.pulls[int(run.links["pr"])]["head"] == f"interlock/{second}"
    assert review_of(world, f"interlock/{second}") is Outcome.HANDLED
    assert world.runs().store.load(second).status is Status.RUNNING
    closed = merged_payload(f"interlock/{second}")
    closed["pull_request"] = {**closed["pull_request"], "merged": False}
    world.deliver("pull_request", closed)
    assert world.runs().store.load(second).status is Status.CANCELLED
    assert world.label()[0] is Outcome.HANDLED
    third = world.runs().store.load(f"issue-{issue}-3")
    assert third.status is Status.RUNNING and third.branch == f"interlock/issue-{issue}-3"
    assert world.fake.labels[(REPO, issue)] == ["interlock:running"]


def test_redeliveries_of_earlier_deliveries_reach_the_run_they_belong_to(world: World) -> None:
    # SPEC GH8, J2: the label that started the first run, and the command that ended it, redelivered after the
    # second run started, neither start a third run nor touch the second
    payload = label_payload()
    world.deliver("issues", payload, delivery="label-1")
    issue = payload["issue"]["number"]
    abandon = example("issue_comment", "created.payload.json")
    abandon["issue"] = {**abandon["issue"], "number": issue}
    abandon["comment"] = {**abandon["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    abandon["sender"] = {**abandon["sender"], "login": "alice", "type": "User"}
    world.deliver("issue_comment", abandon, delivery="abandon-1")
    world.deliver("issues", payload, delivery="label-2")
    second = world.runs().store.load(f"issue-{issue}-2")
    before = len(world.fake.requests)
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.HANDLED
    assert world.deliver("issue_comment", abandon, delivery="abandon-1") is Outcome.HANDLED
    assert writes(world, before) == []
    assert world.runs().store.load(f"issue-{issue}-2").version == second.version
    assert world.runs().store.find(f"issue-{issue}-3") is None
    assert world.deliver("issues", payload, delivery="label-2") is Outcome.HANDLED  # its own start: nothing owed
    assert writes(world, before) == []


def test_a_second_start_that_failed_after_its_branch_was_made_starts_on_redelivery(world: World) -> None:
    # SPEC GH8, GH2: the new run's branch was made, then its save failed (502); the redelivery finds no new run,
    # chooses the same id again and goes on on that branch, with the one starting comment
    _, issue = world.label()
    world.comment(issue, "/interlock abandon")
    world.fake.fail("POST", "createCommitOnBranch", 502, times=10)  # the save
    with pytest.raises(Exception, match="502"):
        world.deliver("issues", label_payload(), delivery="label-2")
    world.fake.faults.clear()
    assert (REPO, f"interlock/issue-{issue}-2") in world.fake.refs
    assert world.runs().store.find(f"issue-{issue}-2") is None
    posted = list(world.fake.comments)
    assert world.deliver("issues", label_payload(), delivery="label-2") is Outcome.HANDLED
    second = world.runs().store.load(f"issue-{issue}-2")
    assert second.status is Status.RUNNING and world.runs().store.find(f"issue-{issue}-3") is None
    assert list(world.fake.comments) == posted  # the starting comment the failed start posted, not a second
    assert second.links["status_comment"] == str(posted[-1])


def test_a_run_that_can_still_be_resumed_is_live_and_a_label_starts_nothing(world: World) -> None:
    # SPEC GH1: only a run that ended (done, cancelled) makes room; an escalated run waits for a person
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    world.review(issue, "approved")
    for seq in range(2, 40):  # review FAILs until the visit budget runs out: escalated
        stage = "review" if seq % 2 == 0 else "build"
        world.job_done(issue, seq, stage, "VERDICT: FAIL" if stage == "review" else "built")
        if world.run(issue).status is Status.GATE_WAIT:
            world.review(issue, "approved")
        if world.run(issue).status is not Status.RUNNING:
            break
    assert world.run(issue).status is Status.ESCALATED
    assert world.label()[0] is Outcome.IGNORED and world.runs().store.find(f"issue-{issue}-2") is None


def test_a_label_on_an_issue_with_one_run_costs_what_it_did(world: World) -> None:
    # the common case stays cheap: the next id is probed only after a run that ended
    _, issue = world.label()
    before = len(world.fake.requests)
    assert world.label()[0] is Outcome.IGNORED
    reads = [r for r in world.fake.requests[before:] if r.url.path.endswith("/graphql")]
    assert len(reads) == 1  # the issue's one run, read once
    before = len(world.fake.requests)
    world.comment(issue, "/interlock stop")
    graphql = [r for r in world.fake.requests[before:] if r.url.path.endswith("/graphql")]
    assert len([r for r in graphql if not mutation_of(r)]) == 1  # read once; the save is a mutation (issue 16)


def test_a_missing_base_branch_is_refused_with_the_fix_on_the_issue(world: World) -> None:
    # SPEC GH8: a configuration that names no branch is bad input, not a failure to reach GitHub: 2xx, the fix
    # said once on the issue, nothing made; once the branch exists, the redelivery starts the run
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", "base: trunk\ndefault_graph: small\n")
    payload = label_payload()
    issue = payload["issue"]["number"]
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.IGNORED
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.IGNORED  # a redelivery says it once
    said = [c["body"] for c in world.fake.comments.values()]
    assert len(said) == 1
    assert "the base branch `trunk` does not exist in octo/app" in said[0]
    assert "create it, or set `base:` in .github/interlock.yml" in said[0]
    assert world.runs().store.find(f"issue-{issue}") is None and world.fake.labels.get((REPO, issue), []) == []
    assert (REPO, f"interlock/issue-{issue}") not in world.fake.refs and world.fake.dispatches == []
    world.fake.seed_branch(REPO, "trunk", {"README.md": "# app"})
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.HANDLED
    assert world.runs().store.load(f"issue-{issue}").status is Status.RUNNING
    assert world.fake.labels[(REPO, issue)] == ["interlock:running"] and len(world.fake.dispatches) == 1


def test_the_service_answers_a_missing_base_branch_with_2xx(
    world: World, settings: ServiceSettings, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8: only a failure to reach GitHub or to save is a 5xx; bad configuration is refused with a log line
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", "base: trunk\ndefault_graph: small\n")
    client = TestClient(create_app(settings, world.router))
    body, headers = signed("issues", label_payload())
    record = post_settled(client, body, headers)
    assert record.outcome == "ignored"
    assert any("base branch `trunk` does not exist" in r.getMessage() for r in caplog.records)


def test_the_readme_says_how_an_issue_runs_again() -> None:
    readme = " ".join(doc("operating/service.md").split())
    assert "Labelling the issue again after its run ended (`done` or `cancelled`) starts a new run" in readme
    assert "`issue-<n>-2`, `issue-<n>-3`" in readme
    assert "A base branch that does not exist is refused with a 202" in readme


@pytest.mark.parametrize("end", ["merge", "close"])
def test_a_redelivered_end_of_a_replaced_run_leaves_the_issue_to_the_new_run(world: World, end: str) -> None:
    # SPEC GH8, GH1: the merge (or close) that ended the first run, redelivered after the issue's next run started,
    # owes the issue nothing: the new run's `interlock:running` label stays and no ended run's label comes back
    _, issue = world.label()
    first = f"issue-{issue}"
    job_of(world, first, 1, "build", "built it")
    review_of(world, f"interlock/{first}")
    job_of(world, first, 2, "review", "VERDICT: PASS")
    ended = merged_payload(f"interlock/{first}")
    ended["pull_request"] = {**ended["pull_request"], "merged": end == "merge"}
    world.deliver("pull_request", ended, delivery="end-1")
    assert world.label()[0] is Outcome.HANDLED
    second = world.runs().store.load(f"issue-{issue}-2")
    before = len(world.fake.requests)
    assert world.deliver("pull_request", ended, delivery="end-1") is Outcome.HANDLED
    assert world.fake.labels[(REPO, issue)] == ["interlock:running"]
    assert writes(world, before) == []
    assert world.runs().store.load(second.id).version == second.version


def test_of_two_labels_at_once_one_starts_the_next_run_and_the_other_is_no_failure(world: World) -> None:
    # SPEC GH1: one live run per issue; issue 11, 11: losing the race to start it is no failure to reach GitHub or
    # to save (a 5xx asks for a redelivery that can only be ignored). The second label's whole delivery is handled
    # while the first one's start is under way (after its starting comment, before its save)
    _, issue = world.label()
    world.comment(issue, "/interlock abandon")
    handle, outcomes = world.fake.handle, []

    def racing(request: Any) -> Any:
        response = handle(request)
        if request.method == "POST" and request.url.path.endswith(f"/issues/{issue}/comments") and not outcomes:
            outcomes.append(world.deliver("issues", label_payload(), delivery="label-b"))
        return response

    for route in world.fake.router.routes:
        route.side_effect = racing
    assert world.deliver("issues", label_payload(), delivery="label-a") is Outcome.IGNORED
    assert outcomes == [Outcome.HANDLED]
    second = world.runs().store.load(f"issue-{issue}-2")
    assert second.status is Status.RUNNING and "label-b" in second.applied
    assert world.runs().store.find(f"issue-{issue}-3") is None and len(world.fake.dispatches) == 2
    assert world.fake.labels[(REPO, issue)] == ["interlock:running"]


@pytest.mark.parametrize(
    "base", ["develop?x=1", "develop#top", "main/../develop", "develop%3F", "release.lock", " develop"]
)
def test_a_base_that_is_no_branch_name_is_a_configuration_error_before_anything_is_made(
    world: World, settings: ServiceSettings, base: str
) -> None:
    # SPEC GH8, GH2: the base goes into GitHub's URLs and pull requests as it is written; `develop?x=1` was read as
    # `develop` by the start's lookup, the run started, and every delivery after its first mission answered 500
    # (the gate's pull request refused). It is the configuration's error: 422 naming it, nothing made
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", f"base: {json.dumps(base)}\ndefault_graph: small\n")
    client = TestClient(create_app(settings, world.router))
    body, headers = signed("issues", label_payload())
    record = post_settled(client, body, headers)
    assert record.state == "failed" and "base" in record.outcome, record
    assert world.fake.dispatches == [] and said_once(world, "- .github/interlock.yml: base: not a branch name")
    assert not any(branch.startswith("interlock/issue") for _, branch in world.fake.refs)


def said_once(world: World, problem: str) -> bool:
    """The only comment is the one that says why nothing started (issue 13: bad configuration is said on the
    issue), naming the problem."""
    bodies = [str(comment["body"]) for comment in world.fake.comments.values()]
    return (
        len(bodies) == 1
        and bodies[0].startswith("Interlock cannot start: the configuration is invalid.")
        and (problem in bodies[0])
    )


@pytest.mark.parametrize("workflow", ["interlock.yml?x=1", ".interlock.yml", "interlock.yml#x", "sub/interlock.yml"])
def test_a_workflow_that_is_no_file_name_of_github_workflows_is_a_configuration_error(
    world: World, settings: ServiceSettings, workflow: str
) -> None:
    # SPEC GH3, GH8: the workflow goes into the dispatch's URL as written, and a job's end is matched on
    # `.github/workflows/<workflow>`; `interlock.yml?x=1` dispatched `interlock.yml`, whose ends were then never
    # matched: the run waited for ever. It is the configuration's error: 422 naming it, nothing made
    config = f"base: develop\ndefault_graph: small\nworkflow: {json.dumps(workflow)}\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    client = TestClient(create_app(settings, world.router))
    body, headers = signed("issues", label_payload())
    record = post_settled(client, body, headers)
    assert record.state == "failed" and "workflow" in record.outcome, record
    assert world.fake.dispatches == [] and said_once(world, "- .github/interlock.yml: workflow: not the file name")
