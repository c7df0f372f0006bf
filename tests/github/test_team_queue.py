# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A team's concurrency on GitHub (SPEC U5, issue 13 item 5): at most ``concurrency`` live runs of a team at once;
further triggers wait in order in ``queues/<team>.json`` on the state branch, each issue told its place, and the next
starts when a run of the team ends, however it ends, across a restart of the service."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from app.engine.record import Status
from app.github.client import GitHubApp
from app.webhooks import shell
from app.webhooks.handlers import Handlers
from app.webhooks.router import Outcome, default_router
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import (  # noqa: F401 - fixture
    GRAPHS,
    REPO,
    World,
    example,
    merged_payload,
    retry_waits,
    world,
)
from tests.helpers import doc

TEAM = """base: develop
default_graph: small
gatekeepers: [carol]
teams:
  core:
    concurrency: {n}
"""


def configure(world: World, text: str) -> None:
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", text)
    shell.CONFIG_CACHE.clear()


def label_payload(issue: int, label: str = "feature-request") -> dict[str, Any]:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": label}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": issue, "title": f"Feature {issue}"}
    payload["issue"]["labels"] = [{"name": "feature-request"}]
    return payload


def trigger(world: World, issue: int, delivery: str | None = None) -> Outcome:
    return world.deliver("issues", label_payload(issue), delivery=delivery)


def restart(world: World, settings: ServiceSettings) -> None:
    """A new service process over the same GitHub: nothing kept in memory survives."""
    shell.CONFIG_CACHE.clear()
    identity = replace(settings, api_url="http://github.test/api/v3").app_identity()
    world.app = GitHubApp(identity, transport=world.fake.transport())
    world.router = Handlers(world.app, [GRAPHS]).register(default_router("interlock-app"))


def run_of(world: World, issue: int) -> Any:
    return world.runs().store.find(f"issue-{issue}")


def said(world: World, issue: int) -> list[str]:
    return [str(c["body"]) for c in world.fake.comments.values() if c.get("issue") == issue]


def places(world: World, issue: int) -> list[str]:
    return [line.split("Place in the queue: ")[1][:5] for line in said(world, issue) if "Place in the queue" in line]


def queue_file(world: World, team: str = "core") -> Any:
    data = world.runs().api.file(REPO, f"queues/{team}.json", "interlock/state")
    return json.loads(data) if data else None


def test_a_queue_of_three_runs_in_order_across_restarts(world: World, settings: ServiceSettings) -> None:
    # SPEC U5: concurrency 1 — the first trigger starts, the others wait in order, each told its place
    configure(world, TEAM.format(n=1))
    assert [trigger(world, issue) for issue in (1, 2, 3)] == [Outcome.HANDLED] * 3
    assert run_of(world, 1).status is not Status.DONE
    assert run_of(world, 2) is None and run_of(world, 3) is None  # no run record for a queued issue
    assert (REPO, "interlock/issue-2") not in world.fake.refs and (REPO, "interlock/issue-3") not in world.fake.refs
    assert (places(world, 2), places(world, 3)) == (["**1**"], ["**2**"])
    assert [entry["issue"] for entry in queue_file(world)["waiting"]] == [2, 3]
    restart(world, settings)
    world.comment(1, "/interlock abandon")  # ended by a person: cancelled
    assert run_of(world, 1).status is Status.CANCELLED
    assert run_of(world, 2) is not None and run_of(world, 2).team == "core" and run_of(world, 3) is None
    assert places(world, 3) == ["**2**", "**1**"]  # told its new place
    restart(world, settings)
    world.job_done(2, 1, "build", "built it")
    world.deliver("pull_request", merged_payload("interlock/issue-2"))  # ended by its merge: done
    assert run_of(world, 2).status is Status.DONE
    assert run_of(world, 3) is not None and queue_file(world)["waiting"] == []
    assert [d["inputs"]["run"] for d in world.fake.dispatches] == ["issue-1", "issue-2", "issue-3"]


def test_two_run_at_once_with_concurrency_two(world: World) -> None:
    # SPEC U5: concurrency 2 — two runs live at once, the third waits for either to end
    configure(world, TEAM.format(n=2))
    for issue in (1, 2, 3):
        trigger(world, issue)
    assert run_of(world, 1) is not None and run_of(world, 2) is not None and run_of(world, 3) is None
    assert places(world, 3) == ["**1**"]
    world.comment(2, "/interlock abandon")
    assert run_of(world, 3) is not None and run_of(world, 1).status is not Status.CANCELLED


def test_a_redelivered_queued_trigger_is_queued_once(world: World) -> None:
    # SPEC U5, GH8: the same delivery again, or a second label, neither queues nor tells twice
    configure(world, TEAM.format(n=1))
    trigger(world, 1)
    trigger(world, 2, delivery="queued-2")
    trigger(world, 2, delivery="queued-2")
    trigger(world, 2, delivery="again-2")
    assert [entry["issue"] for entry in queue_file(world)["waiting"]] == [2]
    assert places(world, 2) == ["**1**"]


def test_an_issue_unlabelled_or_closed_while_waiting_leaves_the_queue(world: World) -> None:
    # SPEC U5: the one who waits and no longer wants the run leaves; the others move up
    configure(world, TEAM.format(n=1))
    for issue in (1, 2, 3, 4):
        trigger(world, issue)
    unlabeled = label_payload(2)
    unlabeled["action"] = "unlabeled"
    assert world.deliver("issues", unlabeled) is Outcome.HANDLED
    closed = example("issues", "reopened.payload.json")  # the corpus has no issues/closed example
    closed["action"] = "closed"
    closed["sender"] = {**closed["sender"], "login": "alice", "type": "User"}
    closed["issue"] = {**closed["issue"], "number": 3, "body": "no marker", "state": "closed"}
    assert world.deliver("issues", closed) is Outcome.HANDLED
    assert [entry["issue"] for entry in queue_file(world)["waiting"]] == [4]
    assert places(world, 4) == ["**3**", "**2**", "**1**"]
    world.comment(1, "/interlock abandon")
    assert run_of(world, 2) is None and run_of(world, 3) is None and run_of(world, 4) is not None


def test_a_repository_without_teams_is_not_limited_unless_it_says_so(world: World) -> None:
    # SPEC U5: the implicit team runs every trigger at once, as before teams; a top-level `concurrency` limits it
    for issue in (1, 2):
        trigger(world, issue)
    assert run_of(world, 2) is not None and queue_file(world) is None
    configure(world, "base: develop\ndefault_graph: small\nconcurrency: 1\n")
    trigger(world, 3)
    trigger(world, 4)
    assert run_of(world, 3) is not None and run_of(world, 4) is None and places(world, 4) == ["**1**"]


def test_a_failed_start_of_the_next_keeps_the_queue(world: World) -> None:
    # SPEC U5, GH8: the next one's start fails (GitHub answers 502); it stays first, and the redelivery starts it
    configure(world, TEAM.format(n=1))
    trigger(world, 1)
    trigger(world, 2)
    abandon = example("issue_comment", "created.payload.json")
    abandon["issue"] = {**abandon["issue"], "number": 1}
    abandon["comment"] = {**abandon["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    abandon["sender"] = {**abandon["sender"], "login": "alice", "type": "User"}
    world.fake.fail("POST", "/git/refs", 502, times=10)
    with pytest.raises(Exception, match="502"):
        world.deliver("issue_comment", abandon, delivery="abandon-1")
    world.fake.faults.clear()
    assert run_of(world, 1).status is Status.CANCELLED and run_of(world, 2) is None
    assert [entry["issue"] for entry in queue_file(world)["waiting"]] == [2]  # not lost
    world.deliver("issue_comment", abandon, delivery="abandon-1")  # GitHub's redelivery
    assert run_of(world, 2) is not None and queue_file(world)["waiting"] == []


def test_the_readme_says_how_queues_work() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("github/teams.md").split())
    assert "A team runs at most `concurrency` live runs at once (default 1)." in text
    assert "The implicit team of a file without `teams:` is not limited, as before teams," in text
    assert "Every key is acted on:" in text and "does not act on it yet" not in text
