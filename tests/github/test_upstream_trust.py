"""Only the close of the upstream request Interlock filed itself moves a run waiting upstream, and only when
the App or someone with the configured permission closed it: the marker in a body is text anyone can copy
(SPEC U3, GH9; issue 11, security 3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.engine.record import Status
from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, upstream_closed

NEEDS_LIB = "I need a lib change.\n```request\nocto/lib\nAdd retries\nThe API flakes.\n```\nVERDICT: NEEDS_UPSTREAM"


@pytest.fixture
def waiting(settings: ServiceSettings) -> Iterator[tuple[World, int, str]]:
    """A run waiting on the request it filed in octo/lib (issue 1 there); its body carries the marker."""
    world = World(settings)
    config = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nupstream: [octo/lib]\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)  # SPEC U3: the target is allowed
    _, issue = world.label()
    world.job_done(issue, 1, "build", NEEDS_LIB)
    assert world.run(issue).status is Status.AWAITING_UPSTREAM
    world.fake.permissions.update({("octo/lib", "lib-maintainer"): "write", ("octo/lib", "passer-by"): "read"})
    yield world, issue, world.fake.filed[0]["body"]
    assert world.fake.problems == []


@pytest.mark.parametrize(
    ("number", "author", "closer", "why"),
    [
        (7, "mallory", "mallory", "an issue anyone opened, carrying a copied marker"),
        (7, "interlock-app[bot]", "lib-maintainer", "another issue the App opened, not the one this run filed"),
        (1, "mallory", "lib-maintainer", "the right number, but not the App's issue"),
        (1, "interlock-app[bot]", "passer-by", "closed by someone without the configured permission"),
        (1, "someone-else[bot]", "lib-maintainer", "opened by another App"),
    ],
)
def test_a_close_that_is_not_trusted_leaves_the_run_waiting(
    waiting: tuple[World, int, str], number: int, author: str, closer: str, why: str
) -> None:
    # SPEC GH9: the run is steered only by the close of its own request, by someone allowed to
    world, issue, body = waiting
    before = world.run(issue)
    outcome = world.deliver("issues", upstream_closed(body, number, "completed", author, closer))
    after = world.run(issue)
    assert outcome is Outcome.IGNORED, why
    assert (after.status, after.version, len(world.fake.dispatches)) == (Status.AWAITING_UPSTREAM, before.version, 1)


def test_the_trusted_close_moves_the_run_once(waiting: tuple[World, int, str]) -> None:
    # SPEC U3: the App's own issue, the number the run recorded, closed by a writer: the run resumes
    world, issue, body = waiting
    assert world.deliver("issues", upstream_closed(body, 1), delivery="close") is Outcome.HANDLED
    assert world.run(issue).status is Status.RUNNING and len(world.fake.dispatches) == 2
