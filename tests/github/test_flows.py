"""Runs driven by real GitHub payloads (from the corpus, changed only where a field must name our label,
branch or installation) against the stand-in GitHub: the exact requests, and what the run becomes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from app.engine.owed import EVENTS_SENT
from app.engine.record import Status
from app.github.client import GitHubApp
from app.github.seen import POSTED_KINDS
from app.github.throttle import ContentLimiter
from app.webhooks.delivery import Delivery
from app.webhooks.handlers import Handlers
from app.webhooks.router import Outcome, Router, default_router
from app.webhooks.settings import ServiceSettings
from app.webhooks.shell import GitHubRuns
from tests.github.fake_github import FakeGitHub, VirtualClock
from tests.helpers import GRAPHS, doc
from tests.webhooks.conftest import EXAMPLES

REPO = "octo/app"
DISPATCHED = {"event": "workflow_dispatch", "path": ".github/workflows/interlock.yml"}  # a mission job's run

INSTALLATION = {"id": 42, "node_id": "MDIz"}
SMALL_GRAPH = {
    "name": "small",
    "entry": "build",
    "nodes": [
        {"stage": "build", "capability": "coding", "humanGate": True},
        {"stage": "review", "capability": "review"},
    ],
    "edges": [
        {"from": "build", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
        {"from": "review", "verdict": "FAIL", "to": "build"},
    ],
}


def example(event: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / event / name).read_text())
    data["installation"] = INSTALLATION
    data["repository"] = {**data["repository"], "full_name": REPO, "default_branch": "main"}
    return data


class World:
    def __init__(self, settings: ServiceSettings) -> None:
        from app.webhooks import shell as runs

        runs.CONFIG_CACHE.clear()
        self.fake = FakeGitHub()
        self.fake.seed_branch(
            REPO,
            "main",
            {
                "README.md": "# app",
                ".github/interlock.yml": "base: develop\ndefault_graph: small\ngatekeepers: [carol]\n",
                ".github/interlock/graphs/small.json": json.dumps(SMALL_GRAPH),
            },
        )
        self.fake.seed_branch(REPO, "develop", {"README.md": "# app"})
        self.fake.permissions.update({(REPO, "alice"): "write", (REPO, "carol"): "admin", (REPO, "mallory"): "read"})
        self.app = GitHubApp(
            replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=self.fake.transport()
        )
        self.clock = VirtualClock()  # the limiter's minutes pass at once, so long flows never wait (issue 16)
        self.app.new_limiter = lambda _who: ContentLimiter(clock=self.clock, sleep=self.clock.sleep, max_wait_s=3600.0)
        self.router: Router = Handlers(self.app, [GRAPHS]).register(default_router("interlock-app"))
        self.count = 0

    def deliver(self, event: str, payload: dict[str, Any], delivery: str | None = None) -> Outcome:
        self.count += 1
        return self.router.dispatch(Delivery(event, delivery or f"delivery-{self.count}", payload))

    def runs(self) -> GitHubRuns:
        return GitHubRuns(self.app, 42, REPO, "main", [GRAPHS])

    def run(self, issue: int) -> Any:
        return self.runs().store.load(f"issue-{issue}")

    def label(self, user: str = "alice", labels: tuple[str, ...] = ()) -> tuple[Outcome, int]:
        payload = example("issues", "labeled.payload.json")
        payload["label"] = {**payload["label"], "name": "feature-request"}
        payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
        payload["issue"]["labels"] = [{"name": name} for name in ("feature-request", *labels)]
        return self.deliver("issues", payload), payload["issue"]["number"]

    def job_done(
        self,
        issue: int,
        seq: int,
        stage: str,
        answer: str,
        store_record: bool = True,
        record: str | None = None,
        delivery: str | None = None,
        **job: Any,
    ) -> Outcome:
        if record is not None:
            self.fake.commit_file(
                REPO, "interlock/state", f"runs/issue-{issue}/missions/{seq:04d}-{stage}.json", record
            )
        elif store_record:
            record = {
                "seq": seq,
                "stage": stage,
                "status": "done",
                "answer": answer,
                "commits": 1,
                "usage": {"calls": 1, "input_tokens": 10, "cost_usd": 0.01},
            }
            self.fake.commit_file(
                REPO, "interlock/state", f"runs/issue-{issue}/missions/{seq:04d}-{stage}.json", json.dumps(record)
            )
        self.fake.job_ended(f"issue-{issue}", seq)  # GitHub lists the job completed as it sends the event
        payload = example("workflow_run", "completed.payload.json")
        payload["workflow_run"] = {
            **payload["workflow_run"],
            "display_title": f"interlock issue-{issue} mission {seq} ({stage})",
            "conclusion": "success" if store_record else "failure",
            **DISPATCHED,
            "head_branch": f"interlock/issue-{issue}",
            **job,
        }
        return self.deliver("workflow_run", payload, delivery)

    def review(self, issue: int, state: str, user: str = "carol", body: str = "") -> Outcome:
        payload = example("pull_request_review", "submitted.payload.json")
        payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": f"interlock/issue-{issue}"}
        payload["review"] = {
            **payload["review"],
            "state": state,
            "body": body,
            "user": {"login": user},
            "submitted_at": "2099-01-01T00:00:00Z",
        }
        return self.deliver("pull_request_review", payload)

    def comment(self, issue: int, body: str, user: str = "alice", delivery: str | None = None) -> Outcome:
        payload = example("issue_comment", "created.payload.json")
        payload["issue"] = {**payload["issue"], "number": issue}
        payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
        payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
        return self.deliver("issue_comment", payload, delivery)


@pytest.fixture(autouse=True)
def retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """githubkit retries 5xx answers three times, waiting 1, 4 and 9 seconds; here it retries without waiting
    (the waits are recorded), so that a flow with a failing GitHub takes milliseconds."""
    import githubkit.core

    waits: list[float] = []
    monkeypatch.setattr(githubkit.core, "time", SimpleNamespace(sleep=waits.append))
    return waits


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    # every request any flow sent matches GitHub's own REST description (path, method, required fields)
    assert made.fake.problems == []


def test_label_starts_a_run_with_branch_journal_comment_and_job(world: World) -> None:
    # SPEC GH1, GH2, GH3, GH4
    outcome, issue = world.label()
    assert outcome is Outcome.HANDLED
    run = world.run(issue)
    assert (run.status, run.stage, run.branch, run.base) == (
        Status.RUNNING,
        "build",
        f"interlock/issue-{issue}",
        "develop",
    )
    start = world.fake.commits[world.fake.refs[(REPO, run.branch)]]
    assert start["parents"] == [world.fake.refs[(REPO, "develop")]] and start["message"].startswith("interlock: start")
    assert world.fake.dispatches == [
        {
            "repo": REPO,
            "workflow": "interlock.yml",
            "ref": run.branch,  # SPEC GH3: on the run branch
            "inputs": {"run": run.id, "mission": "1", "stage": "build", "runner": '"ubuntu-latest"'},
            "return_run_details": True,
        }
    ]
    status = world.fake.comments[int(run.links["status_comment"])]["body"]
    assert f"Interlock run `{run.id}` — running" in status and "```mermaid" in status and "[job](" in status
    assert world.fake.problems == []


def test_only_people_with_write_permission_start_runs(world: World) -> None:
    # SPEC GH1
    outcome, _ = world.label(user="mallory")
    assert outcome is Outcome.HANDLED and world.fake.dispatches == []
    assert any("only people with write permission" in c["body"] for c in world.fake.comments.values())


def test_a_second_label_event_does_not_start_a_second_run(world: World) -> None:
    # SPEC GH1: one live run per issue
    world.label()
    outcome, _ = world.label()
    assert outcome is Outcome.IGNORED and len(world.fake.dispatches) == 1


def test_an_invalid_graph_is_reported_on_the_issue(world: World) -> None:
    # SPEC G6: a run never starts on an invalid graph; the reason is shown where the request came from
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/broken.json", json.dumps({"name": "b"}))
    outcome, _ = world.label(labels=("graph:broken",))
    assert outcome is Outcome.HANDLED and world.fake.dispatches == []
    text = "\n".join(c["body"] for c in world.fake.comments.values())
    assert "graph `broken` is not valid" in text and "entry-missing" in text


def test_job_gate_review_and_merge(world: World) -> None:
    # SPEC GH3, GH5, GH6, H1, H2
    _, issue = world.label()
    assert world.job_done(issue, 1, "build", "built it") is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.GATE_WAIT and run.links["pr"]
    pull = world.fake.pulls[int(run.links["pr"])]
    assert pull["draft"] is True and pull["head"] == run.branch and pull["base"] == "develop"
    assert pull["reviewers"] == ["carol"]
    assert world.review(issue, "commented") is Outcome.IGNORED
    assert world.review(issue, "approved", user="mallory") is Outcome.IGNORED  # no write permission
    assert world.review(issue, "approved", body="Ship it") is Outcome.HANDLED
    run = world.run(issue)
    assert run.stage == "review" and len(world.fake.dispatches) == 2
    world.job_done(issue, 2, "review", "fine\nVERDICT: PASS")
    run = world.run(issue)
    assert run.status is Status.AWAITING_MERGE and pull["draft"] is False  # marked ready through GraphQL
    payload = example("pull_request", "closed.payload.json")
    payload["pull_request"] = {
        **payload["pull_request"],
        "merged": True,
        "head": {**payload["pull_request"]["head"], "ref": run.branch},
    }
    assert world.fake.labels[(REPO, issue)] == ["interlock:running"]
    assert world.deliver("pull_request", payload) is Outcome.HANDLED
    assert world.run(issue).status is Status.DONE
    assert world.fake.labels[(REPO, issue)] == ["interlock:done"]  # the issue list shows how runs ended
    assert world.fake.problems == []


def test_changes_requested_amends_without_a_visit(world: World) -> None:
    # SPEC GH5, H3
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    review_id = example("pull_request_review", "submitted.payload.json")["review"]["id"]
    world.fake.review_notes[review_id] = [{"path": "app.py", "line": 12, "body": "Handle None here."}]
    world.review(issue, "changes_requested", body="Use the new API.")
    run = world.run(issue)
    assert run.status is Status.RUNNING and run.visits == {"build": 1} and run.missions[-1].kind.value == "amend"
    amendment = run.context.preamble[-1].text
    assert "Use the new API." in amendment and "- app.py:12: Handle None here." in amendment


def test_a_job_without_a_record_is_a_failed_mission(world: World) -> None:
    # SPEC GH3, E1
    _, issue = world.label()
    world.job_done(issue, 1, "build", "", store_record=False)
    run = world.run(issue)
    assert run.status is Status.FAILED and "without storing a mission record" in run.reason.message
    assert any(c["body"].startswith("# Decision needed") for c in world.fake.comments.values())


def test_a_redelivered_event_changes_nothing(world: World) -> None:
    # SPEC GH8, J2
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    version = world.run(issue).version
    payload = example("pull_request_review", "submitted.payload.json")
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": f"interlock/issue-{issue}"}
    payload["review"] = {
        **payload["review"],
        "state": "approved",
        "user": {"login": "carol"},
        "submitted_at": "2099-01-01T00:00:00Z",
    }
    world.deliver("pull_request_review", payload, delivery="same-id")
    world.deliver("pull_request_review", payload, delivery="same-id")
    assert world.run(issue).version == version + 1 and len(world.fake.dispatches) == 2


def test_comment_commands(world: World) -> None:
    # SPEC GH7
    _, issue = world.label()
    assert world.comment(issue, "/interlock stop") is Outcome.HANDLED
    assert world.run(issue).stop_requested
    world.comment(issue, "/interlock frobnicate")
    world.comment(issue, "/interlock abandon", user="mallory")
    bodies = [c["body"] for c in world.fake.comments.values()]
    assert any("is not a command Interlock knows" in b for b in bodies)
    assert any("only people with write permission can steer" in b for b in bodies)
    assert world.comment(issue, "just chatting") is Outcome.IGNORED
    world.comment(issue, "/interlock abandon")
    assert world.run(issue).status is Status.CANCELLED


def test_an_effect_that_failed_after_its_transition_was_saved_is_done_on_redelivery(world: World) -> None:
    # SPEC GH8, J2: the delivery fails (5xx) and is redelivered: the job is dispatched once, never twice
    _, issue = world.label()
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "done", "commits": 1}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0001-build.json", json.dumps(record))
    payload = example("workflow_run", "completed.payload.json")
    title = f"interlock issue-{issue} mission 1 (build)"
    payload["workflow_run"] = {**payload["workflow_run"], **DISPATCHED, "display_title": title, "conclusion": "success"}
    payload["workflow_run"]["head_branch"] = f"interlock/issue-{issue}"
    world.fake.fail("POST", "/pulls", 500, times=10)  # the gate's pull request cannot be opened
    with pytest.raises(Exception, match="500"):
        world.deliver("workflow_run", payload, delivery="job-1")
    assert world.run(issue).status is Status.GATE_WAIT and "pr" not in world.run(issue).links
    world.fake.faults.clear()
    assert world.deliver("workflow_run", payload, delivery="job-1") is Outcome.HANDLED  # the redelivery
    run = world.run(issue)
    assert run.links["pr"] and len(world.fake.pulls) == 1
    world.deliver("workflow_run", payload, delivery="job-1")
    assert len(world.fake.pulls) == 1


def test_a_lost_dispatch_is_sent_once_on_redelivery(world: World) -> None:
    # SPEC GH3, GH8: the start was saved but its job could not be dispatched; the redelivery dispatches it once
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    world.fake.fail("POST", "/dispatches", 502, times=10)
    with pytest.raises(Exception, match="502"):
        world.deliver("issues", payload, delivery="label-1")
    world.fake.faults.clear()
    issue = payload["issue"]["number"]
    assert world.run(issue).waiting is not None and world.fake.dispatches == []
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.HANDLED
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.HANDLED
    assert [d["inputs"]["mission"] for d in world.fake.dispatches] == ["1"]
    assert world.deliver("issues", payload, delivery="label-2") is Outcome.IGNORED  # a new label event: one live run


def writes(world: World, since: int) -> list[str]:
    """The requests since ``since`` that change something on GitHub (reads and GraphQL queries aside)."""
    changed = []
    for request in world.fake.requests[since:]:
        path = request.url.path.removeprefix(world.fake.base)
        query = path.endswith("/graphql") and b"mutation" not in request.content
        if request.method != "GET" and not query and not path.endswith("/access_tokens"):
            changed.append(f"{request.method} {path}")
    return changed


def merged_payload(branch: str) -> dict[str, Any]:
    payload = example("pull_request", "closed.payload.json")
    head = {**payload["pull_request"]["head"], "ref": branch}
    payload["pull_request"] = {**payload["pull_request"], "merged": True, "head": head}
    return payload


def reach_review(world: World, graph: dict[str, Any]) -> int:
    """A run of ``graph`` (build at a gate, then review) whose review job has just completed: its issue."""
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(graph))
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    world.review(issue, "approved")
    record = {"seq": 2, "stage": "review", "status": "done", "answer": "Fine.\nVERDICT: PASS", "commits": 0}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0002-review.json", json.dumps(record))
    return issue


def review_job(issue: int, seq: int = 2, stage: str = "review") -> dict[str, Any]:
    payload = example("workflow_run", "completed.payload.json")
    title = f"interlock issue-{issue} mission {seq} ({stage})"
    payload["workflow_run"] = {**payload["workflow_run"], **DISPATCHED, "display_title": title, "conclusion": "success"}
    payload["workflow_run"]["head_branch"] = f"interlock/issue-{issue}"
    return payload


EVENT_GRAPH = {
    **SMALL_GRAPH,
    "nodes": [SMALL_GRAPH["nodes"][0], {"stage": "review", "capability": "review", "event": "reviewed"}],
}


def test_a_redelivered_end_makes_the_pull_request_ready_and_sends_the_event_once(world: World) -> None:
    # SPEC GH6, GH8, J2: the end was saved, then the graph event's dispatch answered 502: the delivery fails;
    # its redelivery carries out what the end still owes, each once; a second redelivery changes nothing
    issue = reach_review(world, EVENT_GRAPH)
    world.fake.fail("POST", f"/repos/{REPO}/dispatches", 502, times=10)
    with pytest.raises(Exception, match="502"):
        world.deliver("workflow_run", review_job(issue), delivery="end-1")
    run = world.run(issue)
    pull = world.fake.pulls[int(run.links["pr"])]
    assert run.status is Status.AWAITING_MERGE and pull["draft"] is True and world.fake.events == []
    world.fake.faults.clear()
    assert world.deliver("workflow_run", review_job(issue), delivery="end-1") is Outcome.HANDLED
    assert pull["draft"] is False  # marked ready
    assert [(e["event_type"], e["client_payload"]) for e in world.fake.events] == [
        ("reviewed", {"run": f"issue-{issue}", "stage": "review"})
    ]
    status = world.fake.comments[int(run.links["status_comment"])]["body"]
    assert "— awaiting_merge" in status and world.fake.labels[(REPO, issue)] == ["interlock:running"]
    before = len(world.fake.requests)
    assert world.deliver("workflow_run", review_job(issue), delivery="end-1") is Outcome.HANDLED
    assert writes(world, before) == [] and len(world.fake.events) == 1


def test_an_end_delivered_at_once_records_its_event_so_a_redelivery_sends_it_never_again(world: World) -> None:
    # SPEC GH8: GitHub may deliver an event twice; a graph event cannot be looked up, so the record says it went
    issue = reach_review(world, EVENT_GRAPH)
    before = len(world.fake.calls())
    assert world.deliver("workflow_run", review_job(issue), delivery="end-1") is Outcome.HANDLED
    assert len(world.fake.events) == 1 and world.run(issue).links["events_sent"] == str(world.run(issue).hop_count)
    calls = world.fake.calls()[before:]
    after_event = calls[calls.index(f"POST /repos/{REPO}/dispatches") + 1 :]
    assert after_event[:2] == ["POST /api/graphql", "POST /api/graphql"]  # 2 calls more: read, createCommitOnBranch
    before = len(world.fake.requests)
    world.deliver("workflow_run", review_job(issue), delivery="end-1")
    assert writes(world, before) == [] and len(world.fake.events) == 1


def test_a_redelivered_merge_adds_the_label_it_could_not_add(world: World) -> None:
    # SPEC GH6, GH8: the run is done; the label that says so failed (502); the redelivery adds it, once
    issue = reach_review(world, SMALL_GRAPH)
    world.deliver("workflow_run", review_job(issue))
    world.fake.fail("POST", f"/issues/{issue}/labels", 502, times=10)
    payload = merged_payload(f"interlock/issue-{issue}")
    with pytest.raises(Exception, match="502"):
        world.deliver("pull_request", payload, delivery="merge-1")
    assert world.run(issue).status is Status.DONE and world.fake.labels[(REPO, issue)] == []
    world.fake.faults.clear()
    assert world.deliver("pull_request", payload, delivery="merge-1") is Outcome.HANDLED
    assert world.fake.labels[(REPO, issue)] == ["interlock:done"]
    before = len(world.fake.requests)
    world.deliver("pull_request", payload, delivery="merge-1")
    assert writes(world, before) == []


def test_a_gate_whose_pull_request_was_opened_but_not_linked_is_completed_on_redelivery(world: World) -> None:
    # SPEC GH5, GH8: the pull request was opened, the save linking it failed: the redelivery finds it (never a
    # second one), asks for the review and posts the gate's message, once each
    _, issue = world.label()
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "built", "commits": 1}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0001-build.json", json.dumps(record))
    world.fake.fail("POST", "createCommitOnBranch", 502, times=10, after=1)  # the gate saved, no link
    with pytest.raises(Exception, match="502"):
        world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1")
    assert world.run(issue).status is Status.GATE_WAIT and "pr" not in world.run(issue).links
    assert len(world.fake.pulls) == 1 and world.fake.pulls[100]["reviewers"] == []
    world.fake.faults.clear()
    assert world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1") is Outcome.HANDLED
    assert world.run(issue).links["pr"] == "100" and len(world.fake.pulls) == 1
    assert world.fake.pulls[100]["reviewers"] == ["carol"]
    gates = [c for c in world.fake.comments.values() if "waits at a human gate" in c["body"]]
    assert len(gates) == 1
    before = len(world.fake.requests)
    world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1")
    assert writes(world, before) == []


def test_a_redelivered_question_is_posted_once(world: World) -> None:
    # SPEC V6, GH8: the question's comment failed after the run was saved awaiting input
    _, issue = world.label()
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "Which database?\nVERDICT: NEEDS_INPUT"}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0001-build.json", json.dumps(record))
    world.fake.fail("POST", f"/issues/{issue}/comments", 502, times=10)
    with pytest.raises(Exception, match="502"):
        world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1")
    assert world.run(issue).status is Status.AWAITING_INPUT
    world.fake.faults.clear()
    assert world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1") is Outcome.HANDLED
    questions = [c["body"] for c in world.fake.comments.values() if "needs an answer from a person" in c["body"]]
    assert len(questions) == 1 and "Which database?" in questions[0]
    before = len(world.fake.requests)
    world.deliver("workflow_run", review_job(issue, 1, "build"), delivery="job-1")
    assert writes(world, before) == []


def upstream_closed(
    body: str,
    number: int,
    reason: str = "completed",
    author: str = "interlock-app[bot]",
    closer: str = "lib-maintainer",
) -> dict[str, Any]:
    """An ``issues.closed`` delivery of an issue in octo/lib (the corpus has no issues/closed example)."""
    payload = example("issues", "reopened.payload.json")
    payload["action"] = "closed"
    payload["repository"] = {**payload["repository"], "full_name": "octo/lib"}
    payload["sender"] = {**payload["sender"], "login": closer, "type": "Bot" if closer.endswith("[bot]") else "User"}
    payload["issue"] = {
        **payload["issue"],
        "number": number,
        "user": {**payload["issue"]["user"], "login": author, "type": "Bot" if author.endswith("[bot]") else "User"},
        "body": body,
        "state": "closed",
        "state_reason": reason,
        "closed_at": "2099-01-03T00:00:00Z",
    }
    return payload


@pytest.mark.parametrize(("reason", "status"), [("completed", Status.RUNNING), ("not_planned", Status.ESCALATED)])
def test_an_upstream_request_is_filed_and_its_closing_moves_the_run(world: World, reason: str, status: Status) -> None:
    # SPEC V6, U3: the shell files the request; completed resumes the run by itself, not planned escalates it
    config = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nupstream: [octo/lib]\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    _, issue = world.label()
    answer = "I need a lib change.\n```request\nocto/lib\nAdd retries\nThe API flakes.\n```\nVERDICT: NEEDS_UPSTREAM"
    world.job_done(issue, 1, "build", answer)
    assert world.run(issue).status is Status.AWAITING_UPSTREAM
    filed = world.fake.filed[0]
    assert (filed["repo"], filed["title"]) == ("octo/lib", "Add retries") and "The API flakes." in filed["body"]
    assert world.run(issue).links["upstream"] == "octo/lib#1"  # SPEC GH9: the run names the request it filed
    world.fake.permissions[("octo/lib", "lib-maintainer")] = "write"
    assert world.deliver("issues", upstream_closed(filed["body"], 1, reason)) is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is status
    if status is Status.RUNNING:
        assert [d["inputs"]["mission"] for d in world.fake.dispatches] == ["1", "2"]
    else:
        assert run.reason.code.value == "upstream_rejected"


def test_a_timeout_loses_no_transition_and_applies_none_twice(world: World) -> None:
    # SPEC GH8, J2: the job completes, the save succeeds, the dispatch of the next job times out; the
    # redelivery neither re-applies the transition nor forgets the job
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built")
    world.review(issue, "approved")
    record = {"seq": 2, "stage": "review", "status": "done", "answer": "VERDICT: FAIL", "commits": 0}
    world.fake.commit_file(REPO, "interlock/state", f"runs/issue-{issue}/missions/0002-review.json", json.dumps(record))
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        **DISPATCHED,
        "head_branch": f"interlock/issue-{issue}",
        "display_title": f"interlock issue-{issue} mission 2 (review)",
        "conclusion": "success",
    }
    world.fake.fail("POST", "/dispatches", 0)
    with pytest.raises(Exception, match=r"(?i)timeout"):
        world.deliver("workflow_run", payload, delivery="job-2")
    version = world.run(issue).version
    world.deliver("workflow_run", payload, delivery="job-2")
    world.deliver("workflow_run", payload, delivery="job-2")
    assert world.run(issue).version == version and world.run(issue).visits["build"] == 2
    assert [d["inputs"]["mission"] for d in world.fake.dispatches] == ["1", "2", "3"]


def state_json(world: World, path: str) -> Any:
    return json.loads(world.fake.logical_files(REPO, "interlock/state")[path])


def test_each_dispatch_stores_the_order_the_job_runs(world: World) -> None:
    # SPEC GH3: the job runs exactly the prompt the engine assembled, read from the state branch
    _, issue = world.label()
    order = state_json(world, f"runs/issue-{issue}/orders/0001-build.json")
    issue_title = example("issues", "labeled.payload.json")["issue"]["title"]
    assert (order["seq"], order["stage"], order["kind"], order["capability"]) == (1, "build", "deliver", "coding")
    assert order["prompt"].startswith("# Interlock mission #1") and issue_title in order["prompt"]
    world.job_done(issue, 1, "build", "built it")
    world.review(issue, "changes_requested", body="Use the new API.")
    amend = state_json(world, f"runs/issue-{issue}/orders/0002-build.json")
    assert amend["kind"] == "amend" and "Use the new API." in amend["prompt"]


def test_missions_run_on_the_runners_of_their_capability(world: World) -> None:
    # SPEC GH3: GitHub-hosted or self-hosted runners, chosen per capability
    config = "base: develop\ndefault_graph: small\nrunners:\n  review: [self-hosted, gpu]\n  default: ubuntu-24.04\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    _, issue = world.label()
    world.job_done(issue, 1, "build", "built it")
    world.review(issue, "approved")
    assert [d["inputs"]["runner"] for d in world.fake.dispatches] == ['"ubuntu-24.04"', '["self-hosted", "gpu"]']


def test_a_decision_job_record_routes_a_decide_node(world: World) -> None:
    # SPEC V8: the record of a decision job is the decision, not a mission
    graph = {
        "name": "small",
        "entry": "triage",
        "nodes": [
            {"stage": "triage", "capability": "triage", "decide": True},
            {"stage": "fix", "capability": "coding"},
        ],
        "edges": [
            {"from": "triage", "verdict": "BUG", "to": "fix"},
            {"from": "triage", "verdict": "QUESTION", "to": "__end__"},
            {"from": "fix", "verdict": "PASS", "to": "__end__"},
        ],
    }
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(graph))
    _, issue = world.label()
    world.job_done(issue, 1, "triage", "It crashes on start.")
    order = state_json(world, f"runs/issue-{issue}/orders/0002-triage.json")
    assert order["kind"] == "decide" and "BUG" in order["prompt"] and "QUESTION" in order["prompt"]
    world.job_done(issue, 2, "triage", "VERDICT: BUG")
    run = world.run(issue)
    assert run.stage == "fix" and run.missions[-2].verdict == "BUG" and run.status is Status.RUNNING


def test_secrets_never_reach_a_comment(world: World) -> None:
    # issue 6: secrets are redacted from everything written to comments
    _, issue = world.label()
    leaked = "ghp_abcdefghijklmnopqrstuvwxyz0123"
    world.job_done(issue, 1, "build", f"Which key? I found {leaked} in .env\nVERDICT: NEEDS_INPUT")
    bodies = [c["body"] for c in world.fake.comments.values()]
    question = next(body for body in bodies if "needs an answer from a person" in body)
    assert "[redacted]" in question and all(leaked not in body for body in bodies)


def test_only_the_mission_workflows_dispatched_runs_count_as_jobs(world: World) -> None:
    # SPEC GH3: a push or pull-request run titled like a mission (a PR title is anyone's) is not one
    _, issue = world.label()
    assert world.job_done(issue, 1, "build", "", store_record=False, event="pull_request") is Outcome.IGNORED
    assert world.job_done(issue, 1, "build", "", store_record=False, path=".github/workflows/ci.yml") is (
        Outcome.IGNORED
    )
    assert world.job_done(issue, 1, "build", "", store_record=False, head_branch="main") is Outcome.IGNORED
    assert world.run(issue).status is Status.RUNNING


def test_an_unreadable_record_is_a_failed_mission_not_a_failing_delivery(world: World) -> None:
    # bad input loses nothing: the delivery is handled, the run escalates with the reason
    _, issue = world.label()
    assert world.job_done(issue, 1, "build", "", record="[1, 2") is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.FAILED and "unreadable" in run.reason.message


def test_a_record_with_fields_of_the_wrong_kind_is_read_leniently(world: World) -> None:
    _, issue = world.label()
    record = json.dumps({"status": "done", "answer": "built", "commits": "x", "exit_code": True, "agent": 3})
    assert world.job_done(issue, 1, "build", "", record=record) is Outcome.HANDLED
    assert world.run(issue).status is Status.GATE_WAIT


def test_a_duplicate_job_the_concurrency_group_cancelled_is_not_the_missions_end(world: World) -> None:
    _, issue = world.label()
    world.fake.dispatches.append(dict(world.fake.dispatches[0]))  # the same mission dispatched twice
    cancelled = {"conclusion": "cancelled", "head_branch": f"interlock/issue-{issue}"}
    assert world.job_done(issue, 1, "build", "", store_record=False, **cancelled) is Outcome.IGNORED
    assert world.run(issue).status is Status.RUNNING


def test_a_bad_usage_figure_loses_only_itself(world: World) -> None:
    # SPEC P3: the cost a job reported is charged even when another of its figures is malformed
    _, issue = world.label()
    record = {"status": "done", "answer": "built", "commits": 1, "usage": {"cost_usd": 0.25, "input_tokens": 1.5}}
    world.job_done(issue, 1, "build", "", record=json.dumps(record))
    line = world.run(issue).ledger.by_category["deliver"]
    assert line.cost_usd == 0.25 and line.input_tokens == 0


def test_the_readme_names_how_a_redelivery_finds_each_effect_done() -> None:
    text = " ".join(doc("operating/service.md").split())
    said = text[text.index("When a delivery fails after its transition was saved") :]
    assert f"`links.{EVENTS_SENT}`" in said and "`owed_effects(run, graph)`" in said
    assert all(kind in said for kind in POSTED_KINDS) and "escalation comment" in said
    assert "or if GitHub took the event but its answer was lost" in said  # no record can tell that apart


@pytest.mark.parametrize(
    ("route", "after"),
    [("/issues/1/comments", 0), ("/git/trees", 0), ("/git/commits", 1)],  # the comment; the save (twice)
)
def test_a_start_that_failed_after_its_branch_was_made_starts_on_redelivery(
    world: World, route: str, after: int
) -> None:
    # SPEC GH8, GH2: the run branch was created, then the start failed before the run was saved (its comment,
    # its save); the redelivery starts the run on that branch instead of failing on it for ever
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    world.fake.fail("POST", route, 502, times=10, after=after)
    with pytest.raises(Exception, match="502"):
        world.deliver("issues", payload, delivery="label-1")
    world.fake.faults.clear()
    assert (REPO, "interlock/issue-1") in world.fake.refs
    posted = list(world.fake.comments)  # the starting comment, when the failure came after it
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.HANDLED
    assert world.run(1).status is Status.RUNNING and [d["inputs"]["mission"] for d in world.fake.dispatches] == ["1"]
    assert list(world.fake.comments) == (posted or list(world.fake.comments))[:1]  # never a second one
    assert world.run(1).links["status_comment"] == str(next(iter(world.fake.comments)))
    before = len(world.fake.requests)
    assert world.deliver("issues", payload, delivery="label-1") is Outcome.HANDLED
    assert writes(world, before) == []


def test_a_redelivery_keeps_the_job_link_of_the_status_comment(world: World) -> None:
    # SPEC GH4, GH8: the job was dispatched by the first delivery; the redelivery finds it and writes nothing,
    # rather than editing the status comment into one without the link to the job's log
    _, issue = world.label(labels=())
    comment = world.fake.comments[int(world.run(issue).links["status_comment"])]
    shown = comment["body"]
    assert "/actions/runs/" in shown
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    before = len(world.fake.requests)
    assert world.deliver("issues", payload, delivery="delivery-1") is Outcome.HANDLED  # the label's redelivery
    assert writes(world, before) == [] and comment["body"] == shown


def test_a_reply_too_long_for_github_is_cut_and_keeps_its_mark(world: World) -> None:
    # SPEC GH7, GH8: GitHub refuses a comment over 65536 characters (422): a reply quoting a huge command, or an
    # escalation quoting a long answer, is cut to fit (its hidden mark kept), never a delivery that fails for ever
    _, issue = world.label()
    assert world.comment(issue, "/interlock resume at " + "y" * 70000) is Outcome.HANDLED
    reply = list(world.fake.comments.values())[-1]["body"]
    assert len(reply) <= 65536 and reply.startswith("@alice") and "cut" in reply
    mark = "<!-- interlock:effect run=issue-1 escalate@1.0 -->"
    comment = world.runs().api.comment(REPO, issue, "z" * 70000 + "\n\n" + mark)
    assert world.fake.comments[comment]["body"].endswith(mark)
    readme = " ".join(doc("operating/service.md").split())
    assert "A comment longer than GitHub's 65,536 characters is cut to fit" in readme
