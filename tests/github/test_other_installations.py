# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A request or a satellite in another account (issue 28 part 5; SPEC U3, U7): the App is installed there with
another installation, whose token alone reaches that account's repositories (the stand-in GitHub answers 404 to
any other, as GitHub does). The App finds the installation (``GET /repos/{owner}/{repo}/installation``) and makes
every call about that repository with its token; the run's own repository keeps its own."""

from __future__ import annotations

import json
from typing import Any

from app.engine.record import Status
from app.github import installations
from app.webhooks.router import Outcome
from tests.github.test_flows import INSTALLATION, REPO, World, upstream_closed, world  # noqa: F401 - fixture
from tests.github.test_requests import LIB_CONFIG, LIB_GRAPH
from tests.github.test_satellites import ONE, pulls
from tests.github.test_team_queue import configure

ACME = "acme/lib"  # another organisation, where the App is installed as installation 88
NEEDS_ACME = "I need a lib change.\n```request\nacme/lib\nAdd retries\nThe API flakes.\n```\nVERDICT: NEEDS_UPSTREAM"


def two_accounts(world: World) -> None:
    """octo (installation 42, the run's) may file requests in acme/lib (installation 88)."""
    world.fake.accounts.update({"octo": INSTALLATION["id"], "acme": 88})
    files = {".github/interlock.yml": LIB_CONFIG.format(auto="false")}
    files[".github/interlock/graphs/small.json"] = json.dumps(LIB_GRAPH)
    world.fake.seed_branch(ACME, "main", files)
    world.fake.seed_branch(ACME, "develop", {"README.md": "# lib"})
    world.fake.permissions[(ACME, "lib-maintainer")] = "write"
    downstream = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nupstream: [acme/lib]\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", downstream)
    installations.FOUND.clear()


def tokens_of(world: World, method: str, part: str) -> set[str]:
    """The installation each request of ``method`` on a path containing ``part`` was made with."""
    return {
        request.headers.get("authorization", "").rsplit("ghs_", 1)[-1]
        for request in world.fake.requests
        if request.method == method and part in request.url.path
    }


def test_a_request_to_another_account_is_filed_with_that_accounts_installation(world: World) -> None:
    # SPEC U3: before, the run's own token got GitHub's 404 and the run escalated with upstream_unfileable
    two_accounts(world)
    _, issue = world.label()
    world.job_done(issue, 1, "build", NEEDS_ACME)
    run = world.run(issue)
    assert run.status is Status.AWAITING_UPSTREAM, run.reason
    [filed] = [made for made in world.fake.filed if made["repo"] == ACME]
    assert run.links["upstream"] == f"{ACME}#{filed['number']}"
    assert "team:intake" in world.fake.labels[(ACME, filed["number"])]  # acme's configuration was read: its team
    assert tokens_of(world, "POST", f"/repos/{ACME}/issues") == {"88"}
    assert tokens_of(world, "POST", f"/repos/{REPO}/issues/{issue}/comments") == {"42"}  # its own stays its own


def test_the_close_in_the_other_account_moves_the_waiting_run_with_its_own_installation(world: World) -> None:
    # SPEC U3, GH9: the close arrives as acme's event (installation 88); the waiting run in octo is read and moved
    # with octo's installation, and the request's label set with acme's
    two_accounts(world)
    _, issue = world.label()
    world.job_done(issue, 1, "build", NEEDS_ACME)
    [filed] = [made for made in world.fake.filed if made["repo"] == ACME]
    closed = upstream_closed(filed["body"], filed["number"])
    closed["repository"] = {**closed["repository"], "full_name": ACME}
    closed["installation"] = {"id": 88}
    assert world.deliver("issues", closed) is Outcome.HANDLED
    assert world.run(issue).status is Status.RUNNING
    assert "request:delivered" in world.fake.labels[(ACME, filed["number"])]


def test_a_repository_of_the_same_owner_asks_github_nothing(world: World) -> None:
    # an App is installed once per account: a sibling of the same owner is the same installation, no call
    assert installations.installation_for(world.app, "octo/docs", REPO, 42) == 42
    assert not [call for call in world.fake.calls() if call.endswith("/installation")]


SATELLITE_TEAM = """base: develop
default_graph: one
teams:
  core:
    satellites: [acme/docs]
"""


def satellite_elsewhere(world: World) -> None:
    """Team core of octo/app (installation 42) has the satellite acme/docs, of another account (installation 88)."""
    world.fake.accounts.update({"octo": INSTALLATION["id"], "acme": 88})
    installations.FOUND.clear()
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/one.json", json.dumps(ONE))
    configure(world, SATELLITE_TEAM)
    world.fake.seed_branch("acme/docs", "main", {"README.md": "# docs"})


def test_a_satellite_in_another_account_gets_its_branch_and_pull_request_with_its_installation(
    world: World,
) -> None:
    # SPEC U7: the run branch and the pull request in acme/docs are made with acme's installation
    satellite_elsewhere(world)
    outcome, issue = world.label()
    assert outcome is Outcome.HANDLED
    run = world.run(issue)
    assert world.fake.refs[("acme/docs", run.branch)] == world.fake.refs[("acme/docs", "main")]
    world.fake.commit_file("acme/docs", run.branch, "guide.md", "# new guide")
    record: dict[str, Any] = {"seq": 1, "stage": "build", "status": "done", "answer": "Done.\nVERDICT: PASS"}
    record |= {"commits": 0, "satellites": {"acme/docs": {"base": "a" * 40, "head": "b" * 40, "commits": 1}}}
    world.job_done(issue, 1, "build", "", record=json.dumps(record))
    assert world.run(issue).links["pr:acme/docs"] == str(pulls(world)["acme/docs"][0])
    assert tokens_of(world, "POST", "/repos/acme/docs/") == {"88"}


def test_a_satellites_pull_request_carries_the_runs_check(world: World) -> None:
    # SPEC W5, U7: the satellite's pull request shows the run's state where a person merges it, made on its head
    # with its installation, and brought up to date at the next transition, never made twice
    satellite_elsewhere(world)
    _, issue = world.label()
    branch = world.run(issue).branch
    world.fake.commit_file("acme/docs", branch, "guide.md", "# new guide")
    head = world.fake.refs[("acme/docs", branch)]
    record: dict[str, Any] = {"seq": 1, "stage": "build", "status": "done", "answer": "Done.\nVERDICT: PASS"}
    record |= {"commits": 0, "satellites": {"acme/docs": {"base": "a" * 40, "head": "b" * 40, "commits": 1}}}
    world.job_done(issue, 1, "build", "", record=json.dumps(record))
    [check] = [c for c in world.fake.check_runs.values() if c["repo"] == "acme/docs"]
    assert check["external_id"] == f"{REPO}#issue-{issue}" and check["head_sha"] == head
    assert world.run(issue).status is Status.AWAITING_MERGE and tokens_of(world, "POST", "acme/docs/check-runs") == {
        "88"
    }
    shown = (check["status"], check["conclusion"])
    world.comment(issue, "/interlock abandon", user="carol")
    [check] = [c for c in world.fake.check_runs.values() if c["repo"] == "acme/docs"]  # the same one, updated
    assert (check["status"], check["conclusion"]) == ("completed", "cancelled") != shown
