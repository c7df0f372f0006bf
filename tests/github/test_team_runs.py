# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Which team a run belongs to on GitHub (issue 13, item 1): a ``team:<name>`` label, else the team whose graphset
holds the graph, else the default team; the run keeps its team's name and works with its team's settings."""

from __future__ import annotations

import json

from app.engine.record import Status
from app.webhooks.router import Outcome
from tests.github.test_flows import REPO, SMALL_GRAPH, World, world  # noqa: F401 - the fixture
from tests.helpers import doc

TEAMS = """base: develop
default_graph: small
gatekeepers: [carol]
teams:
  core:
    roles: {dev: {capabilities: [coding]}}
  docs:
    roles: {writer: {fullAuthority: true}}
    graphsets: [teams/docs]
    gatekeepers: [dave]
    defaultGraph: notes
    autopilot: true
    runners: {coding: [self-hosted, docs]}
"""
NOTES = {**SMALL_GRAPH, "name": "notes"}


def with_teams(world: World) -> None:
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", TEAMS)
    world.fake.commit_file(REPO, "main", "teams/docs/notes.json", json.dumps(NOTES))


def status_of(world: World, issue: int) -> str:
    return str(world.fake.comments[int(world.run(issue).links["status_comment"])]["body"])


def test_the_team_whose_graphset_holds_the_graph_runs_it_with_its_settings(world: World) -> None:
    with_teams(world)
    _, issue = world.label(labels=("graph:notes",))
    run = world.run(issue)
    assert (run.team, run.graph, run.autopilot) == ("docs", "notes", True)  # docs' autopilot, not the top level's
    assert "**Team** `docs` · **Graph** `notes`" in status_of(world, issue)
    assert world.fake.dispatches[0]["inputs"]["runner"] == '["self-hosted", "docs"]'  # docs' runners


def test_a_team_label_picks_the_team_and_its_default_graph(world: World) -> None:
    with_teams(world)
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", TEAMS.replace("autopilot: true", "autopilot: false"))
    _, issue = world.label(labels=("team:docs",))
    run = world.run(issue)
    assert (run.team, run.graph) == ("docs", "notes")
    world.job_done(issue, 1, "build", "built it")
    run = world.run(issue)
    assert run.status is Status.GATE_WAIT and world.fake.pulls[int(run.links["pr"])]["reviewers"] == ["dave"]


def test_a_graph_no_team_holds_goes_to_the_default_team(world: World) -> None:
    with_teams(world)
    _, issue = world.label(labels=("graph:feature",))  # from the bundled library: no team's graphset holds it
    assert (world.run(issue).team, world.run(issue).graph) == ("core", "feature")
    assert "**Team** `core`" in status_of(world, issue)


def test_without_labels_the_default_team_runs_its_default_graph(world: World) -> None:
    with_teams(world)
    _, issue = world.label()
    run = world.run(issue)
    assert (run.team, run.graph, run.autopilot) == ("core", "small", False)  # the top-level keys core inherits
    assert world.fake.dispatches[0]["inputs"]["runner"] == '"ubuntu-latest"'


def test_a_team_label_naming_no_team_starts_nothing_and_says_why(world: World) -> None:
    with_teams(world)
    outcome, issue = world.label(labels=("team:nobody",))
    assert outcome is Outcome.HANDLED and world.fake.dispatches == []
    said = "\n".join(str(c["body"]) for c in world.fake.comments.values())
    assert "the label `team:nobody` names no team of this repository (its teams: `core`, `docs`)" in said
    assert "Nothing was started" in said
    assert (REPO, f"interlock/issue-{issue}") not in world.fake.refs


def test_a_repository_without_teams_records_no_team_and_shows_none(world: World) -> None:
    _, issue = world.label()
    assert world.run(issue).team == ""
    assert "**Team**" not in status_of(world, issue) and "**Graph** `small`" in status_of(world, issue)


def test_the_readme_says_how_a_runs_team_is_chosen() -> None:
    readme = " ".join(doc("github/teams.md").split())
    assert (
        "**Which team a run belongs to**: the team a `team:<name>` label of the issue names, else the first team whose"
        " graphsets hold the run's graph, else the repository's default team (the first, or the implicit one)."
    ) in readme  # each clause is a test above: label, graphset, default team


ROLES = """base: develop
default_graph: small
teams:
  core:
    roles:
      dev: {capabilities: [coding], agent: codex, model: gpt-5-mini, tools: [Read, Edit]}
      lead: {fullAuthority: true, agent: claude, model: claude-haiku-4-5}
"""


def test_each_mission_of_a_team_is_ordered_with_its_roles_agent_model_and_tools(world: World) -> None:
    # SPEC U1, G4: the order the job reads names the role that carries the step, else the full-authority one
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", ROLES)
    _, issue = world.label()
    build = json.loads(world.fake.logical_files(REPO, "interlock/state")[f"runs/issue-{issue}/orders/0001-build.json"])
    assert (build["role"], build["agent"], build["model"], build["tools"]) == (
        "dev",
        "codex",
        "gpt-5-mini",
        ["Read", "Edit"],
    )
    world.job_done(issue, 1, "build", "built it")
    world.review(issue, "approved")
    files = world.fake.logical_files(REPO, "interlock/state")
    review = json.loads(files[f"runs/issue-{issue}/orders/0002-review.json"])
    assert (review["role"], review["agent"], review["model"]) == ("lead", "claude", "claude-haiku-4-5")


def test_without_teams_an_order_names_no_role_and_the_job_runs_its_own_agent(world: World) -> None:
    _, issue = world.label()
    build = json.loads(world.fake.logical_files(REPO, "interlock/state")[f"runs/issue-{issue}/orders/0001-build.json"])
    assert "role" not in build and "agent" not in build and "model" not in build
