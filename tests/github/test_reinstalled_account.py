# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""An account that installed the App again (issue 28 part 5, hostile review; SPEC U3): a request is filed with the
new installation's token. ``installation_for`` remembers an account's id for an hour; after acme uninstalls and
installs the App again (a new id), a request with the remembered id would get GitHub's 404 and escalate the run
``upstream_unfileable`` although the App is installed there: a request asks GitHub anew."""

from __future__ import annotations

from app.engine.record import Status
from app.github import installations
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture
from tests.github.test_other_installations import ACME, NEEDS_ACME, two_accounts


def test_a_reinstalled_account_is_reached_with_its_new_installation(world: World) -> None:
    two_accounts(world)
    assert installations.installation_for(world.app, ACME, REPO, 42) == 88  # remembered (an earlier run's request)
    world.fake.accounts["acme"] = 99  # acme uninstalled the App and installed it again: a new installation id
    _, issue = world.label()
    world.job_done(issue, 1, "build", NEEDS_ACME)
    run = world.run(issue)
    assert run.status is Status.AWAITING_UPSTREAM, (run.status, run.reason)
