"""Who may start and steer a run, tested exhaustively (SPEC GH1, GH5, GH7, GH9; issue 11): every repository role —
none (an outside contributor), read, triage, write, maintain, admin — against every `permission:` a repository can
configure, for the label that starts a run, a `/interlock` command and a gate's review; and the App's own bot,
whose events never act. The stand-in answers the permission endpoint as GitHub does (`permission` knows only
admin, write, read and none; `role_name` says triage or maintain)."""

from __future__ import annotations

import pytest

from app.engine.record import Status
from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, example

ROLES = ["none", "read", "triage", "write", "maintain", "admin"]
CONFIGURED = ["write", "maintain", "admin"]
RANK = {role: rank for rank, role in enumerate(ROLES)}
USER = "dana"


def world_where(settings: ServiceSettings, configured: str, role: str) -> World:
    world = World(settings)
    config = f"base: develop\ndefault_graph: small\ngatekeepers: [carol]\npermission: {configured}\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    if role != "none":  # an outside contributor is no collaborator: GitHub answers 404
        world.fake.permissions[(REPO, USER)] = role
    return world


@pytest.mark.parametrize("configured", CONFIGURED)
@pytest.mark.parametrize("role", ROLES)
def test_a_label_starts_a_run_only_for_the_configured_permission(
    settings: ServiceSettings, configured: str, role: str
) -> None:
    world = world_where(settings, configured, role)
    outcome, _ = world.label(user=USER)
    assert outcome is Outcome.HANDLED
    assert (len(world.fake.dispatches) == 1) is (RANK[role] >= RANK[configured])
    assert world.fake.problems == []


@pytest.mark.parametrize("configured", CONFIGURED)
@pytest.mark.parametrize("role", ROLES)
def test_a_command_steers_a_run_only_for_the_configured_permission(
    settings: ServiceSettings, configured: str, role: str
) -> None:
    world = world_where(settings, configured, role)
    _, issue = world.label(user="carol")  # an admin starts the run
    world.comment(issue, "/interlock stop", user=USER)
    allowed = RANK[role] >= RANK[configured]
    assert world.run(issue).stop_requested is allowed
    if not allowed:
        assert any("can steer" in c["body"] for c in world.fake.comments.values())  # told why nothing changed


@pytest.mark.parametrize("configured", CONFIGURED)
@pytest.mark.parametrize("role", ROLES)
def test_a_review_passes_a_gate_only_for_the_configured_permission(
    settings: ServiceSettings, configured: str, role: str
) -> None:
    world = world_where(settings, configured, role)
    _, issue = world.label(user="carol")
    world.job_done(issue, 1, "build", "built it")
    assert world.run(issue).status is Status.GATE_WAIT
    world.review(issue, "approved", user=USER, body="Ship it")
    passed = world.run(issue).status is not Status.GATE_WAIT
    assert passed is (RANK[role] >= RANK[configured])


def test_the_apps_own_bot_never_starts_or_steers_a_run(settings: ServiceSettings) -> None:
    # SPEC GH5, GH9: events the App caused (its bot is the sender, type Bot) never act, whatever its permission
    world = world_where(settings, "write", "none")
    world.fake.permissions[(REPO, "interlock-app[bot]")] = "admin"
    bot = {"login": "interlock-app[bot]", "type": "Bot"}
    labeled = example("issues", "labeled.payload.json")
    labeled["label"] = {**labeled["label"], "name": "feature-request"}
    labeled["sender"] = {**labeled["sender"], **bot}
    assert world.deliver("issues", labeled) is Outcome.OWN and world.fake.dispatches == []
    _, issue = world.label(user="carol")
    comment = example("issue_comment", "created.payload.json")
    comment["issue"] = {**comment["issue"], "number": issue}
    comment["comment"] = {**comment["comment"], "body": "/interlock stop", "created_at": "2099-01-02T00:00:00Z"}
    comment["sender"] = {**comment["sender"], **bot}
    assert world.deliver("issue_comment", comment) is Outcome.OWN
    assert not world.run(issue).stop_requested
