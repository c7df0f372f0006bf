# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""``extends: owner/repo[:path]`` (issue 13, item 1; Probot's ``_extends``): a repository's configuration over
an organisation's, read through the App's client from the stand-in, across two and three repositories."""

from __future__ import annotations

import pytest

from app.github.config import ConfigInvalid
from app.github.extends import Source, load_config, merge, source_of
from tests.github.test_flows import REPO, World, world  # noqa: F401 - the fixture
from tests.helpers import doc

SHARED = """gatekeepers: [olivia]
autopilot: true
runners: {default: ubuntu-24.04, coding: [self-hosted]}
prices: {m: {input: 1, output: 2}}
upstream: [octo/lib]
teams:
  platform:
    roles: {dev: {capabilities: [coding], agent: codex}, lead: {fullAuthority: true}}
    concurrency: 2
  ops:
    roles: {sre: {capabilities: [deploy]}}
"""


def own(world: World, text: str, repo: str = REPO) -> None:
    world.fake.commit_file(repo, "main", ".github/interlock.yml", text)


def shared(world: World, repo: str, text: str, path: str = ".github/interlock.yml") -> None:
    world.fake.seed_branch(repo, "main", {path: text})


def refused(world: World) -> str:
    with pytest.raises(ConfigInvalid) as caught:
        load_config(world.runs().api, REPO, "main")
    return str(caught.value)


def test_a_repository_inherits_what_it_does_not_set_and_its_own_keys_win(world: World) -> None:
    shared(world, "octo/org-config", SHARED)
    own(
        world,
        "extends: octo/org-config\nbase: develop\ngatekeepers: [carol]\nupstream: []\nrunners: {coding: [gpu]}\n"
        "teams:\n  app: {roles: {dev: {capabilities: [coding]}}}\n  platform: {concurrency: 3}\n",
    )
    config = load_config(world.runs().api, REPO, "main")
    assert (config.extends, config.base, config.autopilot) == ("octo/org-config", "develop", True)
    assert (config.gatekeepers, config.upstream) == (["carol"], [])  # a list is the repository's whole
    assert config.runners == {"coding": ["gpu"], "default": "ubuntu-24.04"}  # a mapping merges key by key
    assert config.prices["m"].input == 1
    app, platform, ops = config.team_settings()  # the repository's teams first: its first is the default team
    assert (app.name, platform.name, ops.name) == ("app", "platform", "ops")
    assert platform.concurrency == 3 and [r.name for r in platform.roster.roles] == ["dev", "lead"]
    assert platform.roster.roles[0].agent == "codex" and platform.gatekeepers == ["carol"]


def test_three_repositories_chain_nearest_first(world: World) -> None:
    shared(
        world,
        "octo/.github",
        "extends: base-config:cfg/interlock.yml\nbase: trunk\nautopilot: false\n",
        "interlock.yml",
    )
    shared(world, "octo/base-config", "base: main\nautopilot: true\ngatekeepers: [root]\n", "cfg/interlock.yml")
    own(world, "extends: .github\ndefault_graph: small\n")  # same owner; a `.github` repository's file is at its root
    config = load_config(world.runs().api, REPO, "main")
    assert (config.base, config.autopilot, config.gatekeepers, config.default_graph) == (
        "trunk",
        False,
        ["root"],
        "small",
    )


def test_a_cycle_of_extends_is_a_configuration_error_naming_it(world: World) -> None:
    shared(world, "octo/a", "extends: octo/b\n")
    shared(world, "octo/b", "extends: octo/a\n")
    own(world, "extends: octo/a\n")
    said = refused(world)
    assert "a cycle of extends (octo/a:.github/interlock.yml → octo/b:.github/interlock.yml → octo/a:" in said
    own(world, f"extends: {REPO}\n")
    assert "a cycle of extends" in refused(world)  # a repository extending itself


def test_a_repository_the_app_cannot_read_is_a_configuration_error(world: World) -> None:
    shared(world, "octo/secret", "gatekeepers: [x]\n")
    world.fake.unreadable.add("octo/secret")
    own(world, "extends: octo/secret\n")
    assert (
        ".github/interlock.yml: extends: octo/secret: the App cannot read octo/secret "
        "(it does not exist, or the App is not installed on it)"
    ) in refused(world)
    own(world, "extends: octo/nowhere\n")
    world.fake.unreadable.add("octo/nowhere")
    assert "the App cannot read octo/nowhere" in refused(world)


def test_a_missing_or_wrong_extended_file_is_named(world: World) -> None:
    shared(world, "octo/empty", "README.md: x\n", "README.md")
    own(world, "extends: octo/empty\n")
    assert "octo/empty has no .github/interlock.yml on its default branch" in refused(world)
    shared(world, "octo/typo", "teams: {core: {rolez: []}}\n")
    own(world, "extends: octo/typo\n")
    assert "octo/typo:.github/interlock.yml: teams.core.rolez: Extra inputs are not permitted" in refused(world)
    own(world, "extends: octo/typo:../../x\n")
    assert "the path may not leave the repository" in refused(world)


def test_probots_spelling_of_where_a_file_is() -> None:
    assert source_of("org-config", "octo") == Source("octo/org-config", ".github/interlock.yml")
    assert source_of("acme/shared:teams.yml", "octo") == Source("acme/shared", "teams.yml")
    assert source_of("acme/.github", "octo") == Source("acme/.github", "interlock.yml")
    assert merge({"a": {"x": 1, "y": [1]}, "b": 2}, {"a": {"y": [2]}, "c": 3}) == {
        "a": {"y": [2], "x": 1},
        "c": 3,
        "b": 2,
    }


def test_a_run_belongs_to_a_team_the_repository_inherits(world: World) -> None:
    shared(world, "octo/org-config", SHARED)
    own(world, "extends: octo/org-config\nbase: develop\ndefault_graph: small\n")
    _, issue = world.label()
    run = world.run(issue)
    assert (run.team, run.autopilot) == ("platform", True)  # the inherited first team, with the inherited autopilot
    assert world.fake.dispatches[0]["inputs"]["runner"] == '["self-hosted"]'  # and its runners


def test_the_readme_example_of_extends_means_what_it_says(world: World) -> None:
    readme = doc("github/configuration.md")
    block = readme.split("**Shared configuration** (`extends:`", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    shared(world, "octo/org-config", SHARED)
    own(world, block)
    config = load_config(world.runs().api, REPO, "main")
    platform, ops = config.team_settings()
    assert (config.gatekeepers, platform.name, platform.concurrency, ops.name) == (["carol"], "platform", 3, "ops")
    assert len(platform.roster.roles) == 2


def test_a_chain_longer_than_five_files_is_refused(world: World) -> None:
    for n in range(1, 6):
        shared(world, f"octo/c{n}", f"extends: octo/c{n + 1}\n")
    shared(world, "octo/c6", "base: main\n")
    own(world, "extends: octo/c1\n")
    assert "octo/c4:.github/interlock.yml: extends: octo/c5: more than 5 files extend one another" in refused(world)
    shared(world, "octo/c4", "base: c4\n")  # five files in all: read
    assert load_config(world.runs().api, REPO, "main").base == "c4"


def test_a_role_of_an_inherited_team_is_merged_key_by_key(world: World) -> None:
    shared(world, "octo/org-config", SHARED)
    own(world, "extends: octo/org-config\nteams:\n  platform: {roles: {dev: {model: o4-mini}}}\n")
    platform, _ = load_config(world.runs().api, REPO, "main").team_settings()
    dev = platform.roster.roles[0]
    assert (dev.name, dev.agent, dev.model, dev.capabilities) == ("dev", "codex", "o4-mini", ["coding"])
