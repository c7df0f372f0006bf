# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Requests between repositories made hard to break (SPEC U3, U4, U5, U6, GH8, GH9; issue 13's hostile review):
a request that would come back to a team waiting in its own chain, two replicas and GitHub's failures while
filing, a close upstream while its run is live, a copied marker and a close by someone without permission."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.engine.record import ReasonCode, Status
from app.github.client import Installation
from app.webhooks.router import Outcome
from tests.github.test_flows import (  # noqa: F401 - fixture
    REPO,
    World,
    merged_payload,
    retry_waits,
    upstream_closed,
    world,
)
from tests.github.test_requests import (
    LIB,
    LIB_CONFIG,
    asks_upstream,
    file_request,
    lib_job,
    lib_run,
    lib_runs,
    lib_trigger,
    request_labels,
    two_repositories,
)
from tests.github.test_supervision import (
    ENDED,
    TEAMS,
    end_a_core_run,
    main_head,
    numbered_from_one,  # noqa: F401 - fixture
    request,
    supervision_issues,
)
from tests.github.test_team_queue import configure, label_payload, run_of, said
from tests.helpers import doc

SELF_ACCEPTING = """base: develop
default_graph: small
gatekeepers: [carol]
upstream: [octo/app]
teams:
  intake:
    acceptsRequests: true
    autoAccept: true
    concurrency: 1
"""
NEEDS_SELF = "I need a helper.\n```request\nocto/app\nAdd a helper\nFor the feature.\n```\nVERDICT: NEEDS_UPSTREAM"
NEEDS_APP = "I need a hook.\n```request\nocto/app\nAdd a hook\nFor retries.\n```\nVERDICT: NEEDS_UPSTREAM"


def test_a_request_an_auto_accepting_team_files_to_itself_does_not_deadlock(world: World) -> None:
    # SPEC U3 (the blocked run resumes by itself; a cycle never would), U4, U5: team `intake` (concurrency 1,
    # autoAccept) asks its own repository, whose team that accepts requests is intake itself: the waiting run
    # would hold the team's only place and its request would queue behind it. Refused by code: nothing filed
    configure(world, SELF_ACCEPTING)
    assert world.deliver("issues", label_payload(7)) is Outcome.HANDLED
    world.job_done(7, 1, "build", NEEDS_SELF)
    run = run_of(world, 7)
    assert run.status is Status.ESCALATED and run.reason.code is ReasonCode.UPSTREAM_CYCLE
    assert [issue["title"] for issue in world.fake.filed if issue["title"] == "Add a helper"] == []
    assert any("Interlock refused to file the request" in text and f"{REPO}:intake" in text for text in said(world, 7))


def test_a_request_back_to_a_team_waiting_in_its_chain_is_refused(world: World) -> None:
    # SPEC U3: octo/app's run waits on octo/lib's intake; intake's run asks octo/app, whose default team is the
    # one waiting: octo/app's run waits on lib's, which would wait on octo/app's team. The chain travels in the
    # request's marker; the second request is not filed and lib's run escalates with upstream_cycle
    two_repositories(world, auto=True, config=LIB_CONFIG + "upstream: [octo/app]\n")
    file_request(world)
    assert "chain=octo/app:" in world.fake.filed[-1]["body"]
    assert lib_job(world, 1, NEEDS_APP) is Outcome.HANDLED
    upstream = lib_run(world, 1)
    assert upstream.status is Status.ESCALATED and upstream.reason.code is ReasonCode.UPSTREAM_CYCLE
    assert [issue for issue in world.fake.filed if issue["title"] == "Add a hook"] == []
    assert world.run(1).status is Status.AWAITING_UPSTREAM


@pytest.mark.usefixtures("numbered_from_one")
def test_a_supervision_request_to_its_own_repository_goes_to_the_team_it_supervises(world: World) -> None:
    # SPEC U6, U3: team watch supervises core and itself accepts requests; its request naming no team goes to core,
    # the supervised team (to watch itself it would be a cycle, refused)
    accepting = TEAMS.replace("    onRunEnd: supervision\n", "    onRunEnd: supervision\n    acceptsRequests: true\n")
    configure(world, accepting.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", request(f"Finding: README.md:1@{main_head(world)}"))
    filed = world.fake.filed[-1]
    number = filed["number"]
    assert filed["title"] == "Cache the graph" and "team:core" in world.fake.labels[(REPO, number)]
    assert run_of(world, 1).status is Status.AWAITING_UPSTREAM


@pytest.mark.parametrize(("status", "error"), [(502, "502"), (0, "injected timeout")])
def test_a_github_failure_while_filing_a_request_is_retried_by_the_redelivery(
    world: World, status: int, error: str
) -> None:
    # SPEC GH8 (a failed delivery is recovered by its redelivery), U3 (the request is filed): GitHub answers 502
    # to the App's new issue (past the client's retries), or times out: the delivery fails, its redelivery files it
    two_repositories(world, auto=True)
    world.label()
    world.fake.fail("POST", f"/repos/{LIB}/issues", status, times=10)
    with pytest.raises(Exception, match=error):
        asks_upstream(world, "end-1")
    assert not [issue for issue in world.fake.filed if issue["repo"] == LIB]
    world.fake.faults.clear()
    asks_upstream(world, "end-1")
    run = world.run(1)
    assert len([issue for issue in world.fake.filed if issue["repo"] == LIB]) == 1, "one request was filed"
    assert run.upstream.id is not None and run.status is Status.AWAITING_UPSTREAM


def test_a_request_the_app_cannot_file_does_not_leave_the_run_waiting_for_nothing(world: World) -> None:
    # SPEC U3 (the blocked run waits on its request), GH9 (only a request Interlock filed itself moves a run):
    # octo/lib refuses the App's issue (404: the installation lost the repository). The run does not wait on no
    # request: it escalates with upstream_unfileable, and the issue names the status and the fix
    two_repositories(world)
    world.label()
    world.fake.fail("POST", f"/repos/{LIB}/issues", 404, times=10)
    asks_upstream(world, "end-1")
    run = world.run(1)
    assert run.status is Status.ESCALATED and run.reason.code is ReasonCode.UPSTREAM_UNFILEABLE
    [told] = [text for text in said(world, 1) if "Could not file the request" in text]
    assert "GitHub answered 404" in told and "the App is not installed on octo/lib" in told


def test_a_request_rejected_while_its_run_is_live_stays_rejected(world: World) -> None:
    # SPEC U3 ("rejected = closed not planned"; exactly one request:* label that says what happened upstream): the
    # request is closed as not planned while its auto-accepted run is live. The waiting run escalates, the label
    # says rejected and stays so at the upstream run's next transition; that run is not stopped (README)
    two_repositories(world, auto=True)
    filed = file_request(world)
    assert lib_run(world, 1).status is Status.RUNNING
    assert world.deliver("issues", upstream_closed(filed["body"], 1, "not_planned")) is Outcome.HANDLED
    assert world.run(1).status is Status.ESCALATED and request_labels(world, 1) == ["request:rejected"]
    lib_job(world, 1)
    assert request_labels(world, 1) == ["request:rejected"]
    assert lib_run(world, 1).status is Status.AWAITING_MERGE  # the upstream run went on: a person abandons it


def test_a_marker_copied_into_a_title_does_not_make_the_supervision_issue_a_request(world: World) -> None:
    # README "a marker copied into another issue ... changes nothing", SPEC GH9: a person titles an issue with a
    # request marker. Its run ends; the App opens the supervision issue, whose body quotes the title. The marker
    # counts only as the trailer of a request's body: the supervision run is no request's run, and no label
    configure(world, TEAMS.format(n=1))
    payload = label_payload(ENDED)
    payload["issue"]["title"] = "Feature <!-- interlock:upstream run=issue-3 repo=octo/other -->"
    world.deliver("issues", payload)
    world.job_done(ENDED, 1, "build", "Built.\nVERDICT: PASS")
    world.review(ENDED, "approved")
    world.job_done(ENDED, 2, "review", "Looks right.\nVERDICT: PASS")
    world.deliver("pull_request", merged_payload(f"interlock/issue-{ENDED}"), delivery="merged")
    [opened] = supervision_issues(world)
    number = opened["number"]
    assert run_of(world, number).supervision
    assert request_labels(world, number, REPO) == []


def test_two_replicas_handling_one_filing_file_one_request(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC GH8 (several replicas; a redelivery does nothing twice), U3, U4: the delivery that filed the request is
    # handled by two replicas at once (GitHub's redelivery of a slow delivery). Replica A claims the filing by
    # compare-and-swap on the run's record before it creates the issue; replica B, in between, finds the claim
    # and files nothing: one request, the one the waiting run names
    two_repositories(world, auto=True)
    world.label()
    real, raced = Installation.create_issue, []

    def replica_b_in_between(self: Installation, repo: str, *args: Any, **kw: Any) -> Any:
        if repo == LIB and not raced:
            raced.append(None)
            raced[0] = asks_upstream(world, "end-1")  # replica B handles the same delivery meanwhile
        return real(self, repo, *args, **kw)

    monkeypatch.setattr(Installation, "create_issue", replica_b_in_between)
    assert asks_upstream(world, "end-1") is Outcome.HANDLED and raced == [Outcome.HANDLED]
    filed = [issue["number"] for issue in world.fake.filed if issue["repo"] == LIB]
    assert filed == [1], f"requests {filed}; the run waits on {world.run(1).links.get('upstream')}"


def test_a_close_by_someone_without_permission_leaves_a_queued_request_in_line(world: World) -> None:
    # README "a close by someone without the configured permission, changes nothing (a request waiting in its
    # team's queue stays in line)", SPEC GH9, U3, U5: the auto-accepted request waits in intake's queue; a person
    # with triage permission (who may close issues, but lacks the configured `write`) closes it: ignored, in line
    two_repositories(world, auto=True)
    world.fake.permissions[(LIB, "triager")] = "triage"
    assert lib_trigger(world, 50, "lib-maintainer") is Outcome.HANDLED
    filed = file_request(world)
    number = world.fake.filed[-1]["number"]
    assert lib_queue(world) == [number]
    closed = upstream_closed(filed["body"], number, "not_planned", closer="triager")
    assert world.deliver("issues", closed) is Outcome.IGNORED
    assert world.run(1).status is Status.AWAITING_UPSTREAM and request_labels(world, number) == ["request:accepted"]
    assert lib_queue(world) == [number]


def lib_queue(world: World) -> list[int]:
    data = lib_runs(world).api.file(LIB, "queues/intake.json", "interlock/state")
    return [entry["issue"] for entry in json.loads(data)["waiting"]] if data else []


def test_the_readme_says_how_requests_are_hardened() -> None:
    # every sentence below is checked by a test of this file
    text = " ".join(doc("github/teams.md", "github/requests.md").split())
    for sentence in (
        "changes nothing (a request waiting in its team's queue stays in line).",
        "The marker counts only as the trailer of the body of an issue the App opened as a request.",
        "A request closed upstream keeps its `delivered` or `rejected` label while its run goes on; that run is not "
        "stopped (a person of the target abandons it).",
        "A request that would come back to a team already waiting in its chain, the requesting run's own team or "
        "any team its chain of requests passes through, is not filed: the run escalates with `upstream_cycle` and "
        "its issue says why.",
        "A supervision run's request to its own repository that names no team goes to the team it supervises.",
        "The filing is claimed with compare-and-swap on the run's record before the issue is made, so two service "
        "replicas handling one delivery file one request.",
        "A GitHub failure (5xx or a timeout) while filing fails the delivery, and its redelivery files the request "
        "(or finds the one a lost answer made: see the end of [the webhook service](../operating/service.md)); "
        "an issue GitHub refuses (404, 422) is not retried: the "
        "run escalates with `upstream_unfileable`, and its issue names the status and the fix.",
    ):
        assert sentence in text, sentence
