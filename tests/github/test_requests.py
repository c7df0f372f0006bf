# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Requests between repositories (SPEC U3, U4, V6; issue 13 items 3 and 4), with the stand-in GitHub holding
octo/app, where a run waits on its request, and octo/lib, where the request is filed and worked on: which team
takes it, its `request:*` labels along its lifecycle, auto-accept, and the waiting run resuming by itself with
the upstream outcome in its context."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.engine.record import Status
from app.webhooks import shell
from app.webhooks.router import Outcome
from app.webhooks.shell import GitHubRuns
from tests.github.test_flows import (  # noqa: F401 - fixture
    GRAPHS,
    REPO,
    World,
    example,
    merged_payload,
    retry_waits,
    review_job,
    upstream_closed,
    world,
)
from tests.helpers import doc

LIB = "octo/lib"
BOT = "interlock-app[bot]"
LIB_GRAPH = {
    "name": "small",
    "entry": "build",
    "nodes": [{"stage": "build", "capability": "coding"}],
    "edges": [{"from": "build", "verdict": "PASS", "to": "__end__"}],
}
LIB_CONFIG = """base: develop
default_graph: small
teams:
  core:
    concurrency: 1
  intake:
    acceptsRequests: true
    autoAccept: {auto}
    concurrency: 1
"""
NEEDS_LIB = (
    "I need a lib change.\n```request\nocto/lib\nAdd retries\n{team}The API flakes.\n```\nVERDICT: NEEDS_UPSTREAM"
)


def two_repositories(world: World, auto: bool = False, config: str = LIB_CONFIG) -> None:
    """octo/app may file requests in octo/lib; octo/lib has teams `core` (its default) and `intake` (takes requests)."""
    world.fake.seed_branch(
        LIB,
        "main",
        {
            ".github/interlock.yml": config.format(auto=str(auto).lower()),
            ".github/interlock/graphs/small.json": json.dumps(LIB_GRAPH),
        },
    )
    world.fake.seed_branch(LIB, "develop", {"README.md": "# lib"})
    world.fake.permissions.update({(LIB, "lib-maintainer"): "write", (LIB, "carol"): "admin"})
    downstream = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nupstream: [octo/lib]\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", downstream)  # SPEC U3: the target is allowed
    shell.CONFIG_CACHE.clear()


def file_request(world: World, team: str = "") -> dict[str, Any]:
    """octo/app's run (issue 1) answers NEEDS_UPSTREAM; the issue it filed in octo/lib."""
    world.label()
    world.job_done(1, 1, "build", NEEDS_LIB.format(team=f"team: {team}\n" if team else ""))
    assert world.run(1).status is Status.AWAITING_UPSTREAM
    return world.fake.filed[-1]


def asks_upstream(world: World, delivery: str) -> Outcome:
    """The end of octo/app's mission 1, which answered NEEDS_UPSTREAM, delivered as ``delivery``."""
    record = {"seq": 1, "stage": "build", "status": "done", "answer": NEEDS_LIB.format(team=""), "commits": 1}
    world.fake.commit_file(REPO, "interlock/state", "runs/issue-1/missions/0001-build.json", json.dumps(record))
    return world.deliver("workflow_run", review_job(1, 1, "build"), delivery=delivery)


def lib_runs(world: World) -> GitHubRuns:
    return GitHubRuns(world.app, 42, LIB, "main", [GRAPHS])


def lib_run(world: World, number: int) -> Any:
    return lib_runs(world).store.find(f"issue-{number}")


def in_lib(payload: dict[str, Any]) -> dict[str, Any]:
    payload["repository"] = {**payload["repository"], "full_name": LIB}
    return payload


def lib_label(world: World, number: int, user: str = "lib-maintainer") -> Outcome:
    """A person of octo/lib labels the request issue with the trigger label (the issue as GitHub sends it)."""
    payload = in_lib(example("issues", "labeled.payload.json"))
    filed = world.fake.created_issue(LIB, number)
    labels = [*world.fake.labels[(LIB, number)], "feature-request"]
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": user, "type": "Bot" if user.endswith("[bot]") else "User"}
    user_field = {**payload["issue"]["user"], "login": BOT, "type": "Bot"}
    issue = {"number": number, "title": filed["title"], "body": filed["body"], "user": user_field}
    payload["issue"] = {**payload["issue"], **issue, "labels": [{"name": name} for name in labels]}
    return world.deliver("issues", payload)


def lib_job(
    world: World, number: int, answer: str = "Added retries.\nVERDICT: PASS", seq: int = 1, repo: str = LIB, **kw: Any
) -> Outcome:
    """The mission job ``seq`` of ``repo``'s run on issue ``number`` ended done, with ``answer``."""
    record = {"seq": seq, "stage": "build", "status": "done", "answer": answer, "commits": 1}
    path = f"runs/issue-{number}/missions/{seq:04d}-build.json"
    world.fake.commit_file(repo, "interlock/state", path, json.dumps(record))
    payload = example("workflow_run", "completed.payload.json")
    payload["repository"] = {**payload["repository"], "full_name": repo}
    payload["workflow_run"] = {
        **payload["workflow_run"],
        "display_title": f"interlock issue-{number} mission {seq} (build)",
        "conclusion": "success",
        "event": "workflow_dispatch",
        "path": ".github/workflows/interlock.yml",
        "head_branch": f"interlock/issue-{number}",
    }
    return world.deliver("workflow_run", payload, **kw)


def lib_merge(world: World, number: int) -> Outcome:
    return world.deliver("pull_request", in_lib(merged_payload(f"interlock/issue-{number}")))


def request_labels(world: World, number: int, repo: str = LIB) -> list[str]:
    return [label for label in world.fake.labels.get((repo, number), []) if label.startswith("request:")]


def dispatched(world: World, repo: str) -> list[str]:
    return [d["inputs"]["run"] + "/" + d["inputs"]["mission"] for d in world.fake.dispatches if d["repo"] == repo]


def test_a_request_naming_no_team_reaches_the_team_that_accepts_requests_and_waits_for_a_person(
    world: World,
) -> None:
    # SPEC U3: filed in octo/lib, open, for its `acceptsRequests` team (not the default team `core`), linked both
    # ways; manual mode: nothing starts until a person labels it
    two_repositories(world)
    filed = file_request(world)
    assert world.fake.labels[(LIB, 1)] == ["request:open", "team:intake"]
    assert (world.run(1).upstream.id, world.run(1).upstream.state) == ("octo/lib#1", "open")  # SPEC V6: its id
    assert f"{REPO}#1" in filed["body"] and "interlock:upstream run=issue-1 repo=octo/app" in filed["body"]
    notes = [
        c["body"] for c in world.fake.comments.values() if c.get("issue") == 1 and "Filed the upstream" in c["body"]
    ]
    assert len(notes) == 1 and f"https://github.com/{LIB}/issues/1" in notes[0]  # the link back
    assert "waits for a person of octo/lib" in notes[0]
    assert lib_run(world, 1) is None and dispatched(world, LIB) == []


def test_without_a_team_that_accepts_requests_the_default_team_takes_it(world: World) -> None:
    two_repositories(world, config=LIB_CONFIG.replace("acceptsRequests: true", "acceptsRequests: false"))
    file_request(world)
    assert world.fake.labels[(LIB, 1)] == ["request:open", "team:core"]


def test_a_request_may_name_the_team_it_is_for(world: World) -> None:
    # SPEC U3: a `team: <name>` line after the title names the target's team; the line is not part of the body
    two_repositories(world)
    filed = file_request(world, team="core")
    assert world.fake.labels[(LIB, 1)] == ["request:open", "team:core"]
    assert filed["body"].startswith("The API flakes.") and "team: core" not in filed["body"]


def test_a_request_naming_a_team_the_target_lacks_goes_to_the_accepting_team_and_says_so(world: World) -> None:
    two_repositories(world)
    filed = file_request(world, team="nobody")
    assert world.fake.labels[(LIB, 1)] == ["request:open", "team:intake"]
    assert "named team `nobody`, which octo/lib does not have" in filed["body"]


def test_labels_follow_the_lifecycle_and_the_waiting_run_resumes_at_done_with_the_pull_request(world: World) -> None:
    # SPEC U3: open -> (a person labels it) in_progress -> done (its PR awaits merge) -> delivered (merged);
    # exactly one request:* label at each step; at done the run in octo/app resumes by itself, the PR in its context
    two_repositories(world)
    file_request(world)
    assert request_labels(world, 1) == ["request:open"]
    assert lib_label(world, 1) is Outcome.HANDLED
    upstream = lib_run(world, 1)
    assert (upstream.team, upstream.status) == ("intake", Status.RUNNING)
    assert request_labels(world, 1) == ["request:in_progress"]
    assert world.run(1).status is Status.AWAITING_UPSTREAM
    assert lib_job(world, 1) is Outcome.HANDLED
    assert lib_run(world, 1).status is Status.AWAITING_MERGE and request_labels(world, 1) == ["request:done"]
    waiting = world.run(1)
    pull = f"http://github.test/{LIB}/pull/{lib_run(world, 1).links['pr']}"  # the API's web host (issue 28)
    assert waiting.status is Status.RUNNING and dispatched(world, REPO) == ["issue-1/1", "issue-1/2"]
    outcome = next(note for note in waiting.context.preamble if note.label.startswith("upstream outcome"))
    assert (
        outcome.data
        and pull in outcome.text
        and "Added retries." in outcome.text
        and "Path: build:PASS" in outcome.text
    )
    assert waiting.upstream.state == "done" and waiting.upstream.id == pull
    version = waiting.version
    assert lib_merge(world, 1) is Outcome.HANDLED
    assert lib_run(world, 1).status is Status.DONE and request_labels(world, 1) == ["request:delivered"]
    assert world.run(1).version == version and dispatched(world, REPO) == ["issue-1/1", "issue-1/2"]  # once


def test_the_waiting_run_resumes_when_the_upstream_pull_request_merges(world: World) -> None:
    # SPEC U3: the news of done was lost (GitHub failed while octo/app's run was told, and nobody redelivered the
    # job's end): the merge delivers the request, and the waiting run resumes then, with the merged PR
    two_repositories(world, auto=True)
    file_request(world)
    world.fake.fail("POST", f"createCommitOnBranch@{REPO}", 502, times=10)
    with pytest.raises(Exception, match="502"):  # the delivery fails: the service answers 5xx
        lib_job(world, 1)
    world.fake.faults.clear()
    assert lib_run(world, 1).status is Status.AWAITING_MERGE and world.run(1).status is Status.AWAITING_UPSTREAM
    assert lib_merge(world, 1) is Outcome.HANDLED
    waiting = world.run(1)
    assert waiting.status is Status.RUNNING and waiting.upstream.state == "delivered"
    assert request_labels(world, 1) == ["request:delivered"]
    assert any(f"{LIB}/pull/" in note.text for note in waiting.context.preamble if note.data)


def test_auto_accept_starts_the_request_on_the_default_graph_without_a_person(world: World) -> None:
    # SPEC U4: `autoAccept: true`: labelled with octo/lib's trigger label, started by the App at once
    two_repositories(world, auto=True)
    file_request(world)
    assert "feature-request" in world.fake.labels[(LIB, 1)] and "team:intake" in world.fake.labels[(LIB, 1)]
    upstream = lib_run(world, 1)
    assert (upstream.team, upstream.graph, upstream.status) == ("intake", "small", Status.RUNNING)
    assert dispatched(world, LIB) == ["issue-1/1"] and request_labels(world, 1) == ["request:in_progress"]
    note = next(c["body"] for c in world.fake.comments.values() if "Filed the upstream" in c["body"])
    assert "Team `intake` of octo/lib accepts requests by itself: it starts without a person." in note


def test_a_redelivered_filing_files_and_starts_nothing_twice(world: World) -> None:
    # SPEC GH8, U4: the job's end that filed the request, delivered again: one issue, one upstream run
    two_repositories(world, auto=True)
    world.label()
    assert asks_upstream(world, "end-1") is Outcome.HANDLED and world.run(1).status is Status.AWAITING_UPSTREAM
    assert asks_upstream(world, "end-1") is Outcome.HANDLED
    assert len(world.fake.filed) == 1 and dispatched(world, LIB) == ["issue-1/1"]


def test_auto_accept_respects_the_teams_queue(world: World) -> None:
    # SPEC U4, U5: the team runs one run at once; the request waits its turn, accepted, and starts when it comes
    two_repositories(world, auto=True)
    assert lib_trigger(world, 50, "lib-maintainer") is Outcome.HANDLED and lib_run(world, 50).team == "intake"
    file_request(world)
    number = world.fake.filed[-1]["number"]
    assert lib_run(world, number) is None and request_labels(world, number) == ["request:accepted"]
    waiting = [c["body"] for c in world.fake.comments.values() if "Place in the queue: **1**" in c["body"]]
    assert len(waiting) == 1
    abandon = in_lib(example("issue_comment", "created.payload.json"))
    abandon["issue"] = {**abandon["issue"], "number": 50}
    abandon["comment"] = {**abandon["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    abandon["sender"] = {**abandon["sender"], "login": "lib-maintainer", "type": "User"}
    assert world.deliver("issue_comment", abandon) is Outcome.HANDLED
    started = lib_run(world, number)
    assert started is not None and started.status is Status.RUNNING and started.team == "intake"
    assert request_labels(world, number) == ["request:in_progress"]


def lib_trigger(world: World, number: int, user: str, labels: tuple[str, ...] = ("team:intake",)) -> Outcome:
    """The trigger label on an issue of octo/lib (not a request) by ``user``."""
    payload = in_lib(example("issues", "labeled.payload.json"))
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
    payload["issue"] = {**payload["issue"], "number": number, "labels": [{"name": name} for name in labels]}
    return world.deliver("issues", payload)


def test_a_manual_team_keeps_its_gate_the_apps_own_label_starts_nothing(world: World) -> None:
    # SPEC U4: manual mode: the App's own `labeled` event as GitHub delivers it is dropped (the router's rule)
    two_repositories(world)
    file_request(world)
    assert lib_label(world, 1, user=BOT) is Outcome.OWN
    assert lib_run(world, 1) is None and request_labels(world, 1) == ["request:open"]


def test_only_the_apps_own_start_passes_an_auto_accepting_teams_permission_check(world: World) -> None:
    # SPEC U4, GH1: auto-accept lets the App start a request; a person without permission who labels an issue of
    # that team is still refused
    two_repositories(world, auto=True)
    world.fake.permissions[(LIB, "passer-by")] = "read"
    assert lib_trigger(world, 60, "passer-by") is Outcome.HANDLED
    assert lib_run(world, 60) is None
    assert any("only people with write permission" in c["body"] for c in world.fake.comments.values())


def test_a_request_a_person_accepts_while_the_team_is_busy_is_labelled_accepted(world: World) -> None:
    # SPEC U3, U5: accepted = a person labelled it; it waits in the team's queue, then runs
    two_repositories(world)
    assert lib_trigger(world, 50, "lib-maintainer") is Outcome.HANDLED and lib_run(world, 50).team == "intake"
    file_request(world)
    number = world.fake.filed[-1]["number"]
    assert lib_label(world, number) is Outcome.HANDLED
    assert lib_run(world, number) is None and request_labels(world, number) == ["request:accepted"]


@pytest.mark.parametrize(
    ("reason", "label", "status"),
    [("not_planned", "request:rejected", Status.ESCALATED), ("completed", "request:delivered", Status.RUNNING)],
)
def test_a_closed_request_is_labelled_and_moves_the_waiting_run(
    world: World, reason: str, label: str, status: Status
) -> None:
    # SPEC U3: closed as not planned by a person of octo/lib: rejected, the waiting run escalates with
    # upstream_rejected; closed as completed (done by hand, no run): delivered, the waiting run resumes
    two_repositories(world)
    filed = file_request(world)
    assert world.deliver("issues", upstream_closed(filed["body"], 1, reason)) is Outcome.HANDLED
    run = world.run(1)
    assert run.status is status and request_labels(world, 1) == [label]
    if status is Status.ESCALATED:
        assert run.reason.code.value == "upstream_rejected"


def test_a_close_by_someone_without_permission_changes_no_label(world: World) -> None:
    # SPEC GH9: the close is not trusted: nothing moves, the request stays open
    two_repositories(world)
    filed = file_request(world)
    world.fake.permissions[(LIB, "passer-by")] = "read"
    closed = upstream_closed(filed["body"], 1, "not_planned", closer="passer-by")
    assert world.deliver("issues", closed) is Outcome.IGNORED
    assert request_labels(world, 1) == ["request:open"] and world.run(1).status is Status.AWAITING_UPSTREAM


def test_a_forged_marker_moves_no_waiting_run(world: World) -> None:
    # SPEC GH9: an issue of octo/lib that copies the marker is run and reaches done: the waiting run, whose record
    # names another issue as its request, does not move
    two_repositories(world)
    filed = file_request(world)
    before = world.run(1)
    forged = in_lib(example("issues", "labeled.payload.json"))
    forged["label"] = {**forged["label"], "name": "feature-request"}
    forged["sender"] = {**forged["sender"], "login": "lib-maintainer", "type": "User"}
    forged["issue"] = {**forged["issue"], "number": 9, "body": filed["body"], "labels": [{"name": "team:intake"}]}
    assert world.deliver("issues", forged) is Outcome.HANDLED  # a writer starts a run on an issue with a copied marker
    assert lib_job(world, 9) is Outcome.HANDLED and lib_run(world, 9).status is Status.AWAITING_MERGE
    after = world.run(1)
    assert (after.status, after.version) == (Status.AWAITING_UPSTREAM, before.version)
    assert dispatched(world, REPO) == ["issue-1/1"]


def test_a_cancelled_run_puts_the_request_back_to_open(world: World) -> None:
    # SPEC U3: the run on the request was abandoned; the request is open for another
    two_repositories(world, auto=True)
    file_request(world)
    abandon = in_lib(example("issue_comment", "created.payload.json"))
    abandon["issue"] = {**abandon["issue"], "number": 1}
    abandon["comment"] = {**abandon["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    abandon["sender"] = {**abandon["sender"], "login": "lib-maintainer", "type": "User"}
    assert world.deliver("issue_comment", abandon) is Outcome.HANDLED
    assert lib_run(world, 1).status is Status.CANCELLED and request_labels(world, 1) == ["request:open"]
    assert world.run(1).status is Status.AWAITING_UPSTREAM


def test_the_readme_says_how_requests_between_repositories_work() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("github/teams.md", "github/requests.md").split())
    assert "**Requests between repositories** (SPEC U3, U4, V6)." in text
    assert "A `team: <name>` line right after the title names the target's team;" in text
    assert "the App starts it at once on the team's `defaultGraph`, without a person," in text
    assert "`in_progress` (its run is live), `done` (its run's pull request awaits merge)," in text
    assert "The waiting run resumes by itself at `done` or `delivered`, whichever comes first," in text
    assert "`satellites` as [Satellite repositories](satellites.md) says," in text
    assert "`acceptsRequests` and `autoAccept` as [Requests between repositories](requests.md) says." in text
    assert "`satellites`, `acceptsRequests` and `autoAccept` are read and checked, but" not in text


def test_a_queued_request_closed_as_not_planned_leaves_the_queue(world: World) -> None:
    # SPEC U3, U5: rejected while it waited its turn: it never starts, and the waiting run escalates
    two_repositories(world, auto=True)
    assert lib_trigger(world, 50, "lib-maintainer") is Outcome.HANDLED
    filed = file_request(world)
    number = world.fake.filed[-1]["number"]
    assert world.deliver("issues", upstream_closed(filed["body"], number, "not_planned")) is Outcome.HANDLED
    assert request_labels(world, number) == ["request:rejected"] and world.run(1).status is Status.ESCALATED
    abandon = in_lib(example("issue_comment", "created.payload.json"))
    abandon["issue"] = {**abandon["issue"], "number": 50}
    abandon["comment"] = {**abandon["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    abandon["sender"] = {**abandon["sender"], "login": "lib-maintainer", "type": "User"}
    world.deliver("issue_comment", abandon)
    assert lib_run(world, number) is None


TOOLS = "octo/tools"


def test_requests_chain_across_three_repositories(world: World) -> None:
    # SPEC U3, U4: octo/app waits on octo/lib, whose run waits on octo/tools; each resumes when the one it waits
    # on is done, and only then
    two_repositories(world, auto=True, config=LIB_CONFIG + "upstream: [octo/tools]\n")
    world.fake.seed_branch(
        TOOLS,
        "main",
        {
            ".github/interlock.yml": LIB_CONFIG.format(auto="true"),
            ".github/interlock/graphs/small.json": json.dumps(LIB_GRAPH),
        },
    )
    world.fake.seed_branch(TOOLS, "develop", {"README.md": "# tools"})
    file_request(world)
    needs_tools = "```request\nocto/tools\nAdd a timer\nFor retries.\n```\nVERDICT: NEEDS_UPSTREAM"
    assert lib_job(world, 1, needs_tools) is Outcome.HANDLED
    assert lib_run(world, 1).status is Status.AWAITING_UPSTREAM and request_labels(world, 1) == ["request:in_progress"]
    [tools] = [issue["number"] for issue in world.fake.filed if issue["repo"] == TOOLS]  # GitHub numbers per repository
    assert request_labels(world, tools, TOOLS) == ["request:in_progress"]
    assert "team:intake" in world.fake.labels[(TOOLS, tools)]
    assert dispatched(world, TOOLS) == [f"issue-{tools}/1"]
    assert lib_job(world, tools, "Timer added.\nVERDICT: PASS", repo=TOOLS) is Outcome.HANDLED
    assert dispatched(world, LIB) == ["issue-1/1", "issue-1/2"] and world.run(1).status is Status.AWAITING_UPSTREAM
    assert "Timer added." in lib_run(world, 1).context.preamble[-1].text
    assert lib_job(world, 1, "Retries use the timer.\nVERDICT: PASS", seq=2) is Outcome.HANDLED
    waiting = world.run(1)
    assert waiting.status is Status.RUNNING and "Retries use the timer." in waiting.context.preamble[-1].text
    assert "Timer added." not in waiting.context.preamble[-1].text


def test_a_filing_whose_note_failed_files_no_second_request_on_redelivery(world: World) -> None:
    # SPEC GH8: the request was filed and recorded, then the note on octo/app's issue failed (502): the delivery
    # fails; its redelivery finds the record names the request this very effect filed, and only posts the note
    two_repositories(world, auto=True)
    world.label()
    world.fake.fail("POST", f"/repos/{REPO}/issues/1/comments", 502, times=10)
    with pytest.raises(Exception, match="502"):
        asks_upstream(world, "end-1")
    world.fake.faults.clear()
    assert asks_upstream(world, "end-1") is Outcome.HANDLED
    notes = [c["body"] for c in world.fake.comments.values() if "Filed the upstream" in c["body"]]
    assert len(world.fake.filed) == 1 and len(notes) == 1 and dispatched(world, LIB) == ["issue-1/1"]
