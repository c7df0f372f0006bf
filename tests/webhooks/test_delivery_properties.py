"""Property test of the delivery path: real payloads of every event the service acts on, mutated (fields
removed, nulled, retyped, made huge or full of control characters), sent signed through the service to the
real handlers and the stand-in GitHub, with a run already live. Whatever the mutation: no 5xx (the stand-in
never fails here, and only a failure of GitHub or of the store may be one), no exception out of the service,
and a refused (400) or ignored (202) delivery writes nothing (SPEC GH8, GH9; issue 11).

A fixed seed and a few dozen examples run in CI in seconds; ``INTERLOCK_PROPERTY_EXAMPLES=2000 pytest
tests/webhooks/test_delivery_properties.py`` runs a longer search.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import World, example, upstream_closed
from tests.webhooks.conftest import SECRET, pem_key, signed
from tests.webhooks.queue_helpers import delivered
from tests.webhooks.test_malformed import commented as a_comment
from tests.webhooks.test_malformed import labelled

EXAMPLES = int(os.environ.get("INTERLOCK_PROPERTY_EXAMPLES", "60"))
SETTINGS = ServiceSettings(app_id="12345", private_key=pem_key(), webhook_secret=SECRET, app_slug="interlock-app")
ISSUE = 1  # the issue of the corpus's issues/labeled example: the live run is issue-1


def commented() -> dict[str, Any]:
    payload = a_comment()
    payload["issue"] = {**payload["issue"], "number": ISSUE}
    return payload


def reviewed() -> dict[str, Any]:
    payload = example("pull_request_review", "submitted.payload.json")
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": f"interlock/issue-{ISSUE}"}
    payload["review"] = {**payload["review"], "state": "approved", "user": {"login": "carol"}}
    return payload


def closed_pull() -> dict[str, Any]:
    payload = example("pull_request", "closed.payload.json")
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": f"interlock/issue-{ISSUE}"}
    return payload


def job() -> dict[str, Any]:
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        "display_title": f"interlock issue-{ISSUE} mission 1 (build)",
        "event": "workflow_dispatch",
        "path": ".github/workflows/interlock.yml",
        "head_branch": f"interlock/issue-{ISSUE}",
    }
    return payload


def upstream() -> dict[str, Any]:
    marker = f"<!-- interlock:upstream run=issue-{ISSUE} repo=octo/app -->"
    return upstream_closed(f"Add retries\n\n{marker}", 1)


BASES: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "labeled": ("issues", labelled),
    "comment": ("issue_comment", commented),
    "review": ("pull_request_review", reviewed),
    "pull": ("pull_request", closed_pull),
    "job": ("workflow_run", job),
    "upstream": ("issues", upstream),
}
COMMON = (
    "action installation installation.id repository repository.full_name repository.default_branch sender sender.login"
)
READ_FIELDS = {  # what each handler reads: most mutations aim here, the rest anywhere in the payload
    "labeled": "label label.name issue issue.number issue.title issue.body issue.labels issue.updated_at",
    "comment": "issue issue.number comment comment.body comment.created_at",
    "review": "review review.state review.user review.user.login review.body review.submitted_at review.id "
    "pull_request pull_request.number pull_request.head pull_request.head.ref",
    "pull": "pull_request pull_request.head pull_request.head.ref pull_request.merged pull_request.closed_at",
    "job": "workflow_run workflow_run.display_title workflow_run.event workflow_run.path workflow_run.head_branch "
    "workflow_run.conclusion workflow_run.updated_at",
    "upstream": "issue issue.number issue.body issue.user issue.user.login issue.state_reason issue.closed_at",
}
READ = {name: [tuple(path.split(".")) for path in f"{COMMON} {fields}".split()] for name, fields in READ_FIELDS.items()}
HOSTILE = "a\x00b\n\r\x1b[31m\u202e\ud800 $(x) ../.."
VALUES = [
    None,
    True,
    False,
    0,
    -1,
    2**64,
    3.5,
    "",
    "x" * 100_000,
    HOSTILE,
    "no-slash",
    [],
    {},
    [HOSTILE],
    {"id": HOSTILE},
]
REMOVE = object()


def paths(data: Any, prefix: tuple[str | int, ...] = (), depth: int = 4) -> list[tuple[str | int, ...]]:
    found: list[tuple[str | int, ...]] = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else []
    for key, value in items:
        found.append((*prefix, key))
        if depth > 1:
            found += paths(value, (*prefix, key), depth - 1)
    return found


def mutate(payload: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    """Set (or remove) the value at ``path``; a path a previous mutation broke is left alone."""
    target: Any = payload
    for key in path[:-1]:
        if (isinstance(target, dict) and key in target) or (isinstance(target, list) and isinstance(key, int)):
            target = target[key] if not isinstance(target, list) or key < len(target) else None
        else:
            return
    if isinstance(target, dict):
        if value is REMOVE:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = copy.deepcopy(value)
    elif isinstance(target, list) and isinstance(path[-1], int) and path[-1] < len(target):
        target[path[-1]] = None if value is REMOVE else copy.deepcopy(value)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(BASES)))
    event, make = BASES[name]
    payload = copy.deepcopy(make())  # example() shares its installation object between payloads
    for _ in range(draw(st.integers(1, 3))):
        anywhere = paths(payload)
        aimed = draw(st.integers(0, 3)) > 0
        path = draw(st.sampled_from(READ[name])) if aimed else draw(st.sampled_from(anywhere))
        mutate(payload, path, draw(st.sampled_from([REMOVE, *VALUES])))
    return name, event, payload


KEPT = ("router", "routes", "requests", "problems")  # the stand-in's wiring and logs; the rest is GitHub's state


class LiveWorld:
    """One world with a live run, started once; each example begins from a copy of the stand-in's state as it
    was right after the start (starting a run per example would take most of the test's time)."""

    def __init__(self) -> None:
        self.world = World(SETTINGS)
        self.world.fake.permissions[("octo/lib", "lib-maintainer")] = "write"
        outcome, issue = self.world.label()
        assert issue == ISSUE and outcome.value == "handled"
        self.state = {k: copy.deepcopy(v) for k, v in vars(self.world.fake).items() if k not in KEPT}
        self.service = TestClient(create_app(SETTINGS, self.world.router))

    def fresh(self) -> World:
        vars(self.world.fake).update(copy.deepcopy(self.state))
        return self.world


LIVE: list[LiveWorld] = []


def live_world() -> tuple[World, TestClient]:
    if not LIVE:
        LIVE.append(LiveWorld())
    return LIVE[0].fresh(), LIVE[0].service


def writes(world: World, since: int) -> list[str]:
    """The requests since ``since`` that change something on GitHub (a GraphQL query and a token change nothing)."""
    return [
        f"{r.method} {r.url.path}"
        for r in world.fake.requests[since:]
        if r.method != "GET"
        and not r.url.path.endswith("/access_tokens")
        and not (r.url.path.endswith("/graphql") and b"mutation" not in r.content)
    ]


@settings(
    max_examples=EXAMPLES,
    derandomize=True,  # a fixed seed: the same examples on every CI run
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(case=mutated())
def test_a_mutated_delivery_never_fails_the_service(case: tuple[str, str, dict[str, Any]]) -> None:
    # SPEC GH8: no 5xx unless GitHub or the store failed; a refused or ignored delivery changes nothing
    name, event, payload = case
    world, service = live_world()
    before, version = len(world.fake.requests), world.run(ISSUE).version
    body, headers = signed(event, payload, delivery=f"mutated-{len(world.fake.requests)}")
    status, answer = delivered(service, body, headers)  # queued ones: their settled record
    assert status in (200, 202, 400), (name, status, answer)
    assert not answer.get("outcome", "").startswith("handler failed"), (name, answer)
    if status == 400 or answer.get("state") == "failed" or answer.get("outcome") in ("ignored", "own"):
        assert writes(world, before) == [] and world.run(ISSUE).version == version
    assert world.fake.problems == []
