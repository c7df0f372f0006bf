"""``teams:`` in ``.github/interlock.yml`` (issue 13, item 1): parsed strictly, every problem named by its
path in the file, and a file without it read as one implicit team made of today's top-level keys."""

from __future__ import annotations

import pytest

from app.github.config import ConfigInvalid, RepoConfig, parse_config
from app.github.teams import TeamUnknown, choose_team, graph_folders, team_named
from tests.helpers import doc

TWO_TEAMS = b"""
gatekeepers: [alice]
default_graph: bugfix
runners: {default: ubuntu-24.04}
teams:
  core:
    roles:
      dev: {capabilities: [coding, testing], agent: codex, model: o4-mini, tools: [Read]}
      lead: {fullAuthority: true, capabilities: [review], systemPrompt: You review., deliverables: [verdict]}
    graphsets: [teams/core]
    concurrency: 2
    satellites: [octo/docs]
    acceptsRequests: true
  docs:
    roles: [{name: writer, capabilities: [writing]}]
    gatekeepers: []
    defaultGraph: docs
    autoAccept: true
    autopilot: true
    runners: {writing: [self-hosted, linux]}
"""


def problems(text: bytes) -> str:
    with pytest.raises(ConfigInvalid) as caught:
        parse_config(text)
    return str(caught.value)


def test_a_file_without_teams_is_one_implicit_team_of_the_top_level_keys() -> None:
    config = parse_config(b"gatekeepers: [bob]\nautopilot: true\ngraphsets: [g]\ndefault_graph: x\nrunners: {a: b}\n")
    [team] = config.team_settings()
    assert (team.name, team.implicit, team.roster.roles) == ("default", True, [])
    assert (team.gatekeepers, team.autopilot, team.graphsets, team.default_graph) == (["bob"], True, ["g"], "x")
    # SPEC U5: the implicit team is not limited (None), as before teams, unless the top-level `concurrency` says so
    assert (team.concurrency, team.satellites, team.auto_accept, team.accepts_requests) == (None, [], False, False)
    assert parse_config(b"concurrency: 2\n").team_settings()[0].concurrency == 2
    assert team.runs_on("a") == config.runs_on("a") == '"b"'
    assert RepoConfig().team_settings()[0].graphsets == [".github/interlock/graphs"]


def test_teams_keep_their_order_and_fill_what_they_leave_out_from_the_top_level() -> None:
    core, docs = parse_config(TWO_TEAMS).team_settings()
    assert (core.name, docs.name) == ("core", "docs")  # the first is the default team
    assert [role.name for role in core.roster.roles] == ["dev", "lead"]
    dev, lead = core.roster.roles
    assert (dev.agent, dev.model, dev.tools, dev.capabilities) == ("codex", "o4-mini", ["Read"], ["coding", "testing"])
    assert (lead.full_authority, lead.system_prompt, lead.deliverables) == (True, "You review.", ["verdict"])
    assert core.roster.assignee("planning") == lead  # SPEC G4: the full-authority role takes what no role carries
    assert (core.gatekeepers, core.default_graph, core.autopilot, core.graphsets) == (
        ["alice"],
        "bugfix",
        False,
        ["teams/core"],
    )
    assert (core.concurrency, core.satellites, core.accepts_requests) == (2, ["octo/docs"], True)
    assert core.runs_on("coding") == '"ubuntu-24.04"'
    assert (docs.gatekeepers, docs.default_graph, docs.auto_accept, docs.autopilot) == ([], "docs", True, True)
    assert (docs.concurrency, docs.graphsets) == (1, [".github/interlock/graphs"])  # SPEC U5: default 1
    assert docs.runs_on("writing") == '["self-hosted", "linux"]' and docs.runs_on("coding") == '"ubuntu-latest"'


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (b"teams: {core: {rolez: []}}", "teams.core.rolez: Extra inputs are not permitted"),
        (
            b"teams: {core: {roles: {dev: {colour: red}}}}",
            "teams.core.roles.dev.colour: Extra inputs are not permitted",
        ),
        (b"teams: {core: {roles: [{name: dev, colour: red}]}}", "teams.core.roles.0.colour: Extra inputs"),
        (b"teams: {core: {default_graph: x}}", "teams.core.default_graph: Extra inputs are not permitted"),
        (b"teams: {core: {concurrency: 0}}", "teams.core.concurrency: Input should be greater than or equal to 1"),
        (b"teams: {core: {satellites: [nobody]}}", "teams.core.satellites.0: String should match pattern"),
        (b"teams: {'a b': {}}", "teams.a b.[key]: String should match pattern"),
        (b"teams: {}", "name at least one team"),
        (
            b"teams: {a: {acceptsRequests: true}, b: {acceptsRequests: true}}",
            "only one team may set acceptsRequests, found a, b",
        ),
        (
            b"teams: {c: {roles: {x: {fullAuthority: true}, y: {fullAuthority: true}}}}",
            "teams.c: only one role may be full-authority, found x, y",
        ),
        (b"teams: {c: {roles: [{name: x}, {name: x}]}}", "teams.c: role names must be unique, found x twice"),
    ],
)
def test_a_wrong_team_is_refused_naming_the_key_and_its_path(text: bytes, named: str) -> None:
    assert named in problems(text)


def test_every_problem_is_named_at_once() -> None:
    said = problems(b"trigger_lable: x\nteams: {core: {roles: {dev: {colour: red}}, concurrency: 0}}")
    assert "trigger_lable: Extra inputs" in said
    assert "teams.core.roles.dev.colour: Extra inputs" in said
    assert "teams.core.concurrency: Input should be greater than or equal to 1" in said


def test_the_readme_teams_example_parses_as_it_says() -> None:
    readme = doc("local/doctor.md", "github/configuration.md", "github/teams.md")
    block = readme.split("**Teams** (SPEC U1, U2).", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    [core] = parse_config(b"gatekeepers: [x]\n" + block.encode()).team_settings()
    assert (core.name, [role.name for role in core.roster.roles], core.gatekeepers) == (
        "core",
        ["dev", "lead"],
        ["alice"],
    )
    assert (core.concurrency, core.satellites, core.accepts_requests, core.auto_accept) == (
        1,
        ["octo/docs"],
        True,
        False,
    )
    assert "teams.core.roles.dev.colour: Extra inputs are not permitted" in problems(
        block.replace("model: o4-mini", "colour: red").encode()
    )


def test_which_team_a_run_belongs_to() -> None:
    core, docs = parse_config(TWO_TEAMS).team_settings()
    teams = [core, docs]
    assert choose_team(teams, ["feature-request", "team:docs"], "teams/core") == docs  # the label first
    assert choose_team(teams, ["graph:x"], "teams/core") == core  # then the team whose graphset holds the graph
    assert choose_team(teams, [], ".github/interlock/graphs") == docs  # docs inherits the top-level graphsets
    assert choose_team([docs, core], [], None) == docs  # the bundled library: the default team, the first
    with pytest.raises(TeamUnknown, match=r"`team:qa` names no team of this repository \(its teams: `core`, `docs`\)"):
        choose_team(teams, ["team:qa"], None)
    [implicit] = RepoConfig().team_settings()
    assert choose_team([implicit], [], None) == implicit


def test_where_a_runs_graph_is_looked_for() -> None:
    teams = parse_config(TWO_TEAMS).team_settings()
    assert graph_folders(teams, []) == ["teams/core", ".github/interlock/graphs"]  # every team's, each once
    assert graph_folders(teams, ["team:docs"]) == [".github/interlock/graphs"]
    assert graph_folders(RepoConfig().team_settings(), []) == [".github/interlock/graphs"]  # as before teams


def test_a_runs_team_by_its_recorded_name_else_the_default_team() -> None:
    core, docs = teams = parse_config(TWO_TEAMS).team_settings()
    assert (team_named(teams, "docs"), team_named(teams, ""), team_named(teams, "gone")) == (docs, core, core)
