"""Two replicas of the service (two processes, each with its own ``GitHubApp``) take turns on one run: each
remembers the check run it last wrote (issue 16), and neither may trust that memory over what the other wrote."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from app.engine.record import Status
from app.github.client import GitHubApp
from app.webhooks.handlers import Handlers
from app.webhooks.router import default_router
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import GRAPHS, World


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []


def replica(world: World, settings: ServiceSettings) -> World:
    """A second service process on the same stand-in GitHub: its own app, so its own remembered checks."""
    other = World(settings)
    other.fake = world.fake
    other.app = GitHubApp(
        replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=world.fake.transport()
    )
    other.app.new_limiter = world.app.new_limiter
    other.router = Handlers(other.app, [GRAPHS]).register(default_router("interlock-app"))
    other.count = 1000
    return other


def test_a_replica_does_not_trust_its_remembered_check_over_what_another_replica_wrote(
    world: World, settings: ServiceSettings
) -> None:
    # SPEC W5 (issue 16's remembered check): the run's check shows the run as the record has it, whichever
    # process made the last transition
    _, issue = world.label()  # this replica makes the check and remembers it, in progress
    other = replica(world, settings)
    other.comment(issue, "/interlock stop")
    other.job_done(issue, 1, "build", "built it")  # the other replica completes it: the run is interrupted
    assert [(c["status"], c["conclusion"]) for c in world.fake.checks_of("issue-1")] == [
        ("completed", "action_required")
    ]
    world.comment(issue, "/interlock resume")
    assert world.run(issue).status is Status.RUNNING
    # as in one process: the completed check is left as it was and a new one shows the run working (GitHub
    # shows the newest check run of a name)
    assert [c["status"] for c in world.fake.checks_of("issue-1")] == ["completed", "in_progress"]
