# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Bad configuration when a run would start (issue 13, item 1): an unknown key, an unknown team, a cycle of
``extends`` or an ``extends`` repository the App cannot read is said on the issue, starts nothing, and the
delivery is answered 422 (never a 5xx): a person fixes the file, then labels again or redelivers."""

from __future__ import annotations

import pytest

from app.github.config import ConfigInvalid
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, world  # noqa: F401 - the fixture
from tests.helpers import doc


def comments(world: World) -> list[str]:
    return [str(comment["body"]) for comment in world.fake.comments.values()]


def refused_start(world: World, config: str) -> str:
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    with pytest.raises(ConfigInvalid):
        world.label()
    assert world.fake.dispatches == [] and not [ref for ref in world.fake.refs if ref[1].startswith("interlock/")]
    [said] = comments(world)
    assert said.startswith("Interlock cannot start: the configuration is invalid.") and "Nothing was started." in said
    return said


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("teams: {core: {roles: {dev: {colour: red}}}}", "teams.core.roles.dev.colour: Extra inputs are not permitted"),
        ("trigger_label: go\nteams: {core: {rolez: []}}", None),  # another trigger label: nothing said, below
        ("extends: octo/a\n", "a cycle of extends (octo/a:.github/interlock.yml → octo/b:.github/interlock.yml"),
        ("extends: octo/secret\n", "the App cannot read octo/secret"),
    ],
)
def test_a_bad_configuration_is_said_on_the_issue_and_starts_nothing(
    world: World, config: str, named: str | None
) -> None:
    world.fake.seed_branch("octo/a", "main", {".github/interlock.yml": "extends: octo/b\n"})
    world.fake.seed_branch("octo/b", "main", {".github/interlock.yml": "extends: octo/a\n"})
    world.fake.unreadable.add("octo/secret")
    if named is None:  # the file names another trigger label: a feature-request label is no start, so no comment
        world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
        with pytest.raises(ConfigInvalid):
            world.label()
        assert comments(world) == [] and world.fake.dispatches == []
        return
    said = refused_start(world, config)
    assert named in said and "\n- " in said  # one line per problem
    assert f"`interlock config check --repo {REPO}` lists every problem" in said


def test_every_problem_is_listed_and_a_redelivery_says_it_once(world: World) -> None:
    config = "trigger_lable: x\nteams: {core: {concurrency: 0}}\n"
    said = refused_start(world, config)
    assert (
        "- .github/interlock.yml: trigger_lable: Extra inputs are not permitted (did you mean `trigger_label`?)\n"
        in said
    )
    assert "- .github/interlock.yml: teams.core.concurrency: Input should be greater than or equal to 1\n" in said
    payload_delivery = f"delivery-{world.count}"
    from tests.github.test_flows import example

    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    with pytest.raises(ConfigInvalid):
        world.deliver("issues", payload, delivery=payload_delivery)
    assert len(comments(world)) == 1


def test_the_delivery_fails_with_the_reason_and_the_issue_is_told(world: World, settings: ServiceSettings) -> None:
    from fastapi.testclient import TestClient

    from app.webhooks.service import create_app
    from tests.webhooks.conftest import signed
    from tests.webhooks.queue_helpers import post_settled
    from tests.webhooks.test_malformed import labelled

    world.fake.commit_file(REPO, "main", ".github/interlock.yml", "teams: {core: {rolez: []}}\n")
    body, headers = signed("issues", labelled())
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    assert record.state == "failed" and "teams.core.rolez" in record.outcome
    assert world.fake.dispatches == [] and any("teams.core.rolez: Extra inputs" in c for c in comments(world))
    readme = " ".join(doc("operating/service.md", "github/configuration.md", "github/teams.md").split())
    assert "on an issue labelled with the trigger label, every problem is also posted on the issue" in readme
