"""Who may start and steer a run, tested exhaustively (SPEC GH1, GH5, GH7, GH9; issue 11): every repository role —
none (an outside contributor), read, triage, write, maintain, admin — against every `permission:` a repository can
configure, for the label that starts a run, a `/interlock` command, a gate's review and the close of an upstream
request; and the App's own bot, whose events never act but for its close of the upstream request it filed. The
stand-in answers the permission endpoint as GitHub does (`permission` knows only admin, write, read and none;
`role_name` says triage or maintain)."""

from __future__ import annotations

import pytest

from app.engine.record import Status
from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, example, upstream_closed
from tests.helpers import doc

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


NEEDS_LIB = "I need a lib change.\n```request\nocto/lib\nAdd retries\nThe API flakes.\n```\nVERDICT: NEEDS_UPSTREAM"
APP_BOT = "interlock-app[bot]"
OTHER_BOT = "helper-app[bot]"  # another App's bot: GitHub answers its permission like anyone's
CLOSERS = [*ROLES, "bot", "app"]


def waiting_upstream(settings: ServiceSettings, configured: str, closer: str) -> tuple[World, int, str, str]:
    """A run of octo/app waiting on the request it filed in octo/lib (issue 1 there, opened by the App), and who
    closes it: a person with a role on octo/lib, another App's bot with write permission, or the App itself."""
    world = World(settings)
    config = f"base: develop\ndefault_graph: small\npermission: {configured}\nupstream: [octo/lib]\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    _, issue = world.label(user="carol")
    world.job_done(issue, 1, "build", NEEDS_LIB)
    assert world.run(issue).status is Status.AWAITING_UPSTREAM and world.run(issue).links["upstream"] == "octo/lib#1"
    login = {"app": APP_BOT, "bot": OTHER_BOT}.get(closer, USER)
    if closer == "bot":
        world.fake.permissions[("octo/lib", OTHER_BOT)] = "write"
    elif closer in RANK and closer != "none":
        world.fake.permissions[("octo/lib", USER)] = closer
    return world, issue, world.fake.filed[0]["body"], login


def may_close(configured: str, closer: str) -> bool:
    """Exactly the App, and anyone with the configured permission on the repository of the request."""
    role = {"bot": "write"}.get(closer, closer)
    return closer == "app" or RANK[role] >= RANK[configured]


@pytest.mark.parametrize("configured", CONFIGURED)
@pytest.mark.parametrize("closer", CLOSERS)
def test_closing_an_upstream_request_steers_the_run_only_for_the_app_and_the_configured_permission(
    settings: ServiceSettings, caplog: pytest.LogCaptureFixture, configured: str, closer: str
) -> None:
    # SPEC GH9, U3: the close of the request the run filed (the App's own issue, the number the run recorded) moves
    # the run when the App or someone with the configured permission closed it; anyone else changes nothing
    world, issue, body, login = waiting_upstream(settings, configured, closer)
    before = world.run(issue)
    outcome = world.deliver("issues", upstream_closed(body, 1, "completed", APP_BOT, login))
    after = world.run(issue)
    if may_close(configured, closer):
        assert outcome is Outcome.HANDLED
        assert after.status is Status.RUNNING and len(world.fake.dispatches) == 2
    else:
        assert outcome is Outcome.IGNORED
        assert (after.status, after.version, len(world.fake.dispatches)) == (
            Status.AWAITING_UPSTREAM,
            before.version,
            1,
        )
        assert any(f"closed by {login}, who lacks the permission" in r.getMessage() for r in caplog.records)
    assert world.fake.problems == []


@pytest.mark.parametrize("reason", ["completed", "not_planned"])
def test_the_apps_own_close_of_its_upstream_request_reaches_the_run(settings: ServiceSettings, reason: str) -> None:
    # SPEC U3, GH9: the App's own events never act (bot loop protection), except its close of the request it filed:
    # the issues.closed payload names the App's bot as the sender, and it moves the run like a maintainer's close
    world, issue, body, _ = waiting_upstream(settings, "admin", "app")
    closed = upstream_closed(body, 1, reason, APP_BOT, APP_BOT)
    assert closed["sender"]["type"] == "Bot"
    assert world.router.is_own(Delivery("issues", "own-close", closed))
    assert world.deliver("issues", closed) is Outcome.HANDLED
    expected = Status.RUNNING if reason == "completed" else Status.ESCALATED
    assert world.run(issue).status is expected


def test_every_other_event_the_app_caused_stays_its_own(settings: ServiceSettings) -> None:
    # SPEC GH8: only the upstream close is let through; the App's own close of any other issue, and the App's
    # labels, comments, reviews and pull-request closes, change nothing
    world, issue, _, _ = waiting_upstream(settings, "write", "app")
    world.fake.permissions[(REPO, APP_BOT)] = "admin"
    bot = {"login": APP_BOT, "type": "Bot"}
    before = world.run(issue).version
    plain = upstream_closed("An issue the App closed, with no marker.", 1, "completed", APP_BOT, APP_BOT)
    assert world.deliver("issues", plain) in (Outcome.IGNORED, Outcome.OWN)
    labeled = example("issues", "labeled.payload.json")
    labeled["label"] = {**labeled["label"], "name": "feature-request"}
    comment = example("issue_comment", "created.payload.json")
    comment["issue"] = {**comment["issue"], "number": issue}
    comment["comment"] = {**comment["comment"], "body": "/interlock abandon", "created_at": "2099-01-02T00:00:00Z"}
    branch = f"interlock/issue-{issue}"
    closed = example("pull_request", "closed.payload.json")
    closed["pull_request"] = {**closed["pull_request"], "head": {**closed["pull_request"]["head"], "ref": branch}}
    for event, payload in [("issues", labeled), ("issue_comment", comment), ("pull_request", closed)]:
        payload["sender"] = {**payload["sender"], **bot}
        assert world.deliver(event, payload) is Outcome.OWN, event
    assert world.run(issue).version == before and world.run(issue).status is Status.AWAITING_UPSTREAM


def test_the_readme_says_which_of_the_apps_own_events_count() -> None:
    readme = " ".join(doc("operating/service.md").split())
    assert "Its close by the App itself is the one event the App causes that Interlock acts on" in readme
