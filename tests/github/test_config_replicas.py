"""What a replica keeps of a repository's configuration between deliveries (issue 27): never a configuration
read at an earlier head of the default branch than the one the record's read brought (in the same call)."""

from __future__ import annotations

from dataclasses import replace

from app.github.client import GitHubApp
from app.webhooks import shell
from app.webhooks.handlers import Handlers
from app.webhooks.router import default_router
from app.webhooks.settings import ServiceSettings
from tests.github.test_advisor_flows import CONFIG, FAILED, state
from tests.github.test_flows import GRAPHS, REPO, World


def two_replicas(settings: ServiceSettings) -> tuple[World, World]:
    """Two service routers, each with its own ``GitHubApp``, over one stand-in GitHub (made first: a ``World``
    forgets the process's kept configurations when it is made)."""
    one, two = World(settings), World(settings)
    two.fake = one.fake
    two.app = GitHubApp(
        replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=one.fake.transport()
    )
    two.app.new_limiter = one.app.new_limiter
    two.router = Handlers(two.app, [GRAPHS]).register(default_router("interlock-app"))
    two.count = 1000
    one.fake.commit_file(REPO, "main", ".github/interlock.yml", CONFIG)
    return one, two


def test_a_replica_never_acts_on_a_configuration_kept_from_before_the_default_branch_moved(
    settings: ServiceSettings,
) -> None:
    # SPEC GH9 (configuration from the default branch), issue 27: the advisor an order names is the one the
    # default branch names now, whichever replica kept which configuration, within the minute it is kept
    one, two = two_replicas(settings)
    _, issue = one.label()
    one.job_done(issue, 1, "build", "", record=FAILED)  # read with the record: kept for main's head
    assert state(one, f"runs/issue-{issue}/orders/0002-build.json")["agent"] == "openai:gpt-4o-mini"
    kept = shell.CONFIG_CACHE[REPO]
    one.fake.commit_file(REPO, "main", ".github/interlock.yml", CONFIG.replace("gpt-4o-mini", "gpt-4o"))
    assert shell.CONFIG_CACHE[REPO] is kept  # nothing told this process: it still keeps the earlier one
    two.job_done(issue, 2, "build", "retry")  # the other replica takes the advice: mission 3 is dispatched
    two.job_done(issue, 3, "build", "", record=FAILED.replace('"seq": 1', '"seq": 3'))
    assert state(one, f"runs/issue-{issue}/orders/0004-build.json")["agent"] == "openai:gpt-4o"
    assert shell.CONFIG_CACHE[REPO][1] == one.fake.refs[(REPO, "main")]  # kept again, for the new head


def test_while_the_default_branch_stays_the_configuration_is_not_read_again(settings: ServiceSettings) -> None:
    # the check costs no call: the head comes with the record's read; a transition reads no configuration
    one, two = two_replicas(settings)
    _, issue = one.label()
    one.job_done(issue, 1, "build", "", record=FAILED)
    before = len(one.fake.calls("GET"))
    two.job_done(issue, 2, "build", "retry")
    reads = one.fake.calls("GET")[before:]
    assert not [call for call in reads if call.endswith("/contents/.github/interlock.yml")], reads
