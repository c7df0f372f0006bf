"""Deliveries with malformed fields, through the service and the real handlers against the stand-in GitHub:
each is answered 202 and its record ends FAILED naming the field (a field the handler needs is missing or
unsafe) or APPLIED as ignored, never retried, and a refused delivery changes nothing on GitHub (SPEC GH8,
issue 11 item 11)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.webhooks.delivery import Delivery, MalformedDelivery
from app.webhooks.handlers import when
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import World, example
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import post_settled

Mutate = Callable[[dict[str, Any]], None]


def labelled() -> dict[str, Any]:
    """A real ``issues.labeled`` delivery by a writer, with the trigger label: it would start a run."""
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return payload


def commented() -> dict[str, Any]:
    payload = example("issue_comment", "created.payload.json")
    payload["comment"] = {**payload["comment"], "body": "/interlock stop"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return payload


def reviewed() -> dict[str, Any]:
    payload = example("pull_request_review", "submitted.payload.json")
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": "interlock/issue-1"}
    payload["review"] = {**payload["review"], "state": "approved", "user": {"login": "carol"}}
    return payload


def job() -> dict[str, Any]:
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        "display_title": "interlock issue-1 mission 1 (build)",
        "event": "workflow_dispatch",
        "path": ".github/workflows/interlock.yml",
        "head_branch": "interlock/issue-1",
    }
    return payload


def setter(*path: str, value: Any) -> Mutate:
    def mutate(payload: dict[str, Any]) -> None:
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def remover(*path: str) -> Mutate:
    def mutate(payload: dict[str, Any]) -> None:
        target = payload
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


REFUSED = [
    ("issues", labelled, remover("repository"), "repository.full_name"),
    ("issues", labelled, setter("repository", "full_name", value="no-slash"), "repository.full_name"),
    ("issues", labelled, setter("repository", "full_name", value="octo/app\n"), "repository.full_name"),
    ("issues", labelled, setter("repository", "full_name", value="octo/.."), "repository.full_name"),
    ("issues", labelled, setter("repository", "full_name", value=["octo/app"]), "repository.full_name"),
    ("issues", labelled, setter("issue", "number", value=True), "issue.number"),
    ("issues", labelled, setter("issue", "number", value=2**64), "issue.number"),
    ("issues", labelled, setter("issue", "number", value=-3), "issue.number"),
    ("issues", labelled, setter("issue", "number", value="7"), "issue.number"),
    ("issues", labelled, setter("issue", value=None), "issue.number"),
    ("issues", labelled, setter("sender", "login", value="al\x00ice"), "sender.login"),
    ("issues", labelled, setter("sender", "login", value="a/b"), "sender.login"),
    ("issues", labelled, setter("installation", "id", value=False), None),
    ("issue_comment", commented, setter("issue", "number", value=False), "issue.number"),
    ("issue_comment", commented, setter("sender", value="alice"), "sender.login"),
    ("issue_comment", commented, setter("repository", "full_name", value="\u202eocto/app"), "repository.full_name"),
    ("pull_request_review", reviewed, setter("review", "user", "login", value="car\nol"), "review.user.login"),
    ("pull_request_review", reviewed, setter("repository", value="octo/app"), "repository.full_name"),
    (
        "workflow_run",
        job,
        setter("workflow_run", "display_title", value="interlock issue-1 mission " + "9" * 5000 + " (b)"),
        None,
    ),
    ("workflow_run", job, setter("workflow_run", "display_title", value="interlock issue-1 mission 1 (up/x)"), None),
    ("workflow_run", job, setter("workflow_run", "display_title", value="interlock issue-1 mission 1 (a\x00b)"), None),
]


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []


@pytest.mark.parametrize(("event", "make", "mutate", "field"), REFUSED)
def test_a_malformed_delivery_is_400_or_ignored_and_changes_nothing(
    world: World,
    settings: ServiceSettings,
    caplog: pytest.LogCaptureFixture,
    event: str,
    make: Callable[[], dict[str, Any]],
    mutate: Mutate,
    field: str | None,
) -> None:
    # SPEC GH8: a field a handler needs that is missing, mistyped or unsafe is a 400 naming it (a log line says
    # so); a delivery that is not for Interlock is ignored; neither writes anything to GitHub
    payload = copy.deepcopy(make())  # example() shares its installation object between payloads
    mutate(payload)
    body, headers = signed(event, payload)
    service = TestClient(create_app(settings, world.router))
    with caplog.at_level(logging.WARNING, logger="interlock.webhooks"):
        record = post_settled(service, body, headers)
    writes = [call for call in world.fake.calls() if not call.startswith("GET")]
    assert writes == [] and world.fake.comments == {} and world.fake.dispatches == []
    assert record.attempts == 1  # refused or ignored at once: no retry could help
    if field is None:
        assert record.state == "applied" and record.outcome == "ignored"
        return
    assert record.state == "failed" and record.outcome.startswith("malformed delivery: ")
    assert f"`{field}`" in record.outcome
    assert any(f"`{field}`" in line.getMessage() for line in caplog.records)


def test_labels_that_are_no_list_do_not_stop_a_start(world: World, settings: ServiceSettings) -> None:
    # SPEC GH1: the issue's labels are read leniently: the default graph starts
    payload = labelled()
    payload["issue"]["labels"] = 5
    body, headers = signed("issues", payload)
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    assert record.outcome == "handled" and world.run(payload["issue"]["number"]).graph == "small"


def test_a_time_without_a_zone_is_utc_so_that_it_compares() -> None:
    moment = when("2020-01-01T00:00:00")
    assert moment.tzinfo is not None and moment < when("2020-01-01T00:00:01Z")


def test_a_refusal_names_the_field() -> None:
    with pytest.raises(MalformedDelivery, match=r"`issue\.number` is missing or not a positive integer"):
        Delivery("issues", "d", {"issue": {"number": True}}).require_number("issue", "number")


def test_a_lone_surrogate_in_a_field_is_stored_as_a_question_mark(world: World, settings: ServiceSettings) -> None:
    # SPEC GH8: JSON may carry "\ud800", which no file or comment can: the job's link, quoted in the failed
    # mission's answer, is saved with "?" in its place instead of failing the delivery for ever
    _, issue = world.label()
    payload = job()
    payload["workflow_run"] = {**payload["workflow_run"], "conclusion": "failure", "html_url": "https://x/\ud800"}
    body, headers = signed("workflow_run", payload, delivery="surrogate")
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    assert record.outcome == "handled" and world.run(issue).mission(1).status.value == "crashed"
    assert any("https://x/?" in text for text in world.fake.files_at("octo/app", "interlock/state").values())
