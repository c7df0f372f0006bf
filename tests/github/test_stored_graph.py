# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A run whose graph stored on the state branch cannot be read (issue 13): its events are refused with 422 and a
clear message on its issue naming the file and the fix, nothing changed, and the redelivery after the fix goes
on — never a 5xx."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.engine.record import Status
from app.runner import driver
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from app.webhooks.stored_graph import StoredGraphRefused
from tests.github.test_flows import REPO, World, example, world  # noqa: F401 - fixture
from tests.helpers import doc
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled

STATE = "interlock/state"


def break_graph(world: World, issue: int, text: str) -> str:
    """The run's stored graph replaced by ``text``; what it was, to restore."""
    path = f"runs/issue-{issue}/graph.json"
    good = world.fake.files_at(REPO, STATE)[path]
    world.fake.commit_file(REPO, STATE, path, text)
    driver.GRAPH_CACHE.clear()  # a new service process: nothing cached
    return good


def told(world: World, issue: int) -> list[str]:
    return [
        str(c["body"])
        for c in world.fake.comments.values()
        if c.get("issue") == issue and "Interlock cannot go on with run" in str(c["body"])
    ]


def job_payload(issue: int) -> dict[str, object]:
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        "display_title": f"interlock issue-{issue} mission 1 (build)",
        "conclusion": "success",
        "event": "workflow_dispatch",
        "path": ".github/workflows/interlock.yml",
        "head_branch": f"interlock/issue-{issue}",
    }
    return payload


def test_an_unreadable_stored_graph_refuses_the_runs_event_with_422_and_tells_its_issue(
    world: World, settings: ServiceSettings
) -> None:
    _, issue = world.label()
    version = world.run(issue).version
    record = '{"seq": 1, "stage": "build", "status": "done", "answer": "built", "commits": 1}'
    world.fake.commit_file(REPO, STATE, f"runs/issue-{issue}/missions/0001-build.json", record)
    good = break_graph(world, issue, '{"name": "small", "nodes": [')
    body, headers = signed("workflow_run", job_payload(issue), delivery="job-1")
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    assert record.state == "failed" and f"runs/issue-{issue}/graph.json" in record.outcome
    [said] = told(world, issue)
    assert f"`git log interlock/state -- runs/issue-{issue}/graph.json`" in said and "`interlock redeliver`" in said
    assert world.run(issue).version == version  # nothing changed
    with pytest.raises(StoredGraphRefused):  # a redelivery before the fix: told once
        world.deliver("workflow_run", job_payload(issue), delivery="job-1")
    assert len(told(world, issue)) == 1
    world.fake.commit_file(REPO, STATE, f"runs/issue-{issue}/graph.json", good)
    world.deliver("workflow_run", job_payload(issue), delivery="job-1")  # the redelivery after the fix goes on
    assert world.run(issue).status is Status.GATE_WAIT


def test_a_stored_graph_that_is_no_graph_refuses_a_command_and_tells_the_issue(world: World) -> None:
    _, issue = world.label()
    break_graph(world, issue, '{"name": "small", "entry": "nowhere", "nodes": [], "edges": []}')
    with pytest.raises(StoredGraphRefused, match=r"runs/issue-\d+/graph\.json"):
        world.comment(issue, "/interlock abandon")
    assert len(told(world, issue)) == 1 and world.run(issue).status is not Status.CANCELLED


def test_the_readme_says_what_an_unreadable_stored_graph_does() -> None:
    text = " ".join(doc("operating/service.md").split())
    assert "A run whose graph stored on `interlock/state` cannot be read" in text
    assert "each of its events is answered 422 and changes nothing" in text
