"""Teams in ``.github/interlock.yml`` (SPEC U1, U2, U4, U5, U7, H4): the ``teams:`` key, and the one implicit
team a repository without it has, so that every run belongs to a team and the rest of the App asks a team,
never the file's top-level keys, what to do.

```yaml
teams:
  core:                                  # the first team is the repository's default team
    roles:
      dev: {capabilities: [coding, testing], agent: codex, model: o4-mini}
      lead: {fullAuthority: true, capabilities: [review], systemPrompt: "You review."}
    gatekeepers: [alice]
    graphsets: [.github/interlock/graphs]
    defaultGraph: feature
    autoAccept: false
    autopilot: false
    gates: {separateDuties: true}        # the person who requested a run may not approve its gates (SPEC H6)
    concurrency: 1
    satellites: [octo/docs]
    acceptsRequests: true
    runners: {coding: [self-hosted, linux]}
    onRunEnd: supervision                # a run of another team ended: supervise it on this graph (SPEC U6)
```

A team key left out takes the file's top-level key of the same meaning (``gatekeepers``, ``graphsets``,
``default_graph``, ``autopilot``, ``runners``), so a one-team file reads like today's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.engine.errors import InterlockError
from app.engine.graph.model import GateRules
from app.engine.team import Role, Team

TEAM_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"  # it is written in a `team:<name>` label
REPOSITORY = r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$"
IMPLICIT_TEAM = "default"

TeamName = Annotated[str, Field(pattern=TEAM_NAME)]
Runners = dict[str, str | list[str]]


class TeamConfig(BaseModel):
    """One team as written under ``teams:``; ``None`` is "left out": the top-level key applies."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    roles: list[Role] = Field(default_factory=list, description="the roster; a mapping of name to role, or a list")
    gatekeepers: list[str] | None = Field(None, description="reviewers asked at the team's gates")
    graphsets: list[str] | None = Field(None, description="folders of graph files the team attaches to (SPEC U2)")
    default_graph: str | None = Field(
        None, alias="defaultGraph", min_length=1, description="the team's graph for a run that names none"
    )
    auto_accept: bool = Field(
        False, alias="autoAccept", description="start accepted requests on defaultGraph without a person (SPEC U4)"
    )
    autopilot: bool | None = Field(None, description="pass the team's gates automatically (SPEC H4)")
    gates: GateRules | None = Field(None, description="who may pass the team's gates: separateDuties (SPEC H6)")
    concurrency: int = Field(1, ge=1, description="runs of the team at once (SPEC U5)")
    satellites: list[Annotated[str, Field(pattern=REPOSITORY)]] = Field(
        default_factory=list, description="other repositories, owner/name, where the team's work may land (SPEC U7)"
    )
    accepts_requests: bool = Field(
        False, alias="acceptsRequests", description="takes the requests filed to the repository naming no team"
    )
    runners: Runners | None = Field(None, description="runs-on per capability; `default` for the rest")
    on_run_end: str | None = Field(
        None,
        alias="onRunEnd",
        min_length=1,
        description="the graph of a supervision run started when a run of another team ends (SPEC U6)",
    )

    @field_validator("roles", mode="before")
    @classmethod
    def _roles_by_name(cls, value: Any) -> Any:
        """``roles: {dev: {...}}`` is ``roles: [{name: dev, ...}]``, as in a local configuration's team."""
        if isinstance(value, dict):
            return [{"name": name, **role} if isinstance(role, dict) else role for name, role in value.items()]
        return value

    @model_validator(mode="after")
    def _coherent(self) -> TeamConfig:
        names = [role.name for role in self.roles]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"role names must be unique, found {', '.join(twice)} twice")
        Team(roles=self.roles)  # its own rule: at most one full-authority role (SPEC G4)
        return self


class TeamSettings(BaseModel):
    """A team with every setting decided: what the App reads when it runs the team's work."""

    model_config = ConfigDict(frozen=True)

    name: str
    roster: Team
    gatekeepers: list[str]
    graphsets: list[str]
    default_graph: str
    auto_accept: bool
    autopilot: bool
    separate_duties: bool  # the requester of a run may not approve its gates (SPEC H6)
    concurrency: int | None  # None: no limit (the implicit team, unless the top-level `concurrency` sets one)
    satellites: list[str]
    accepts_requests: bool
    runners: Runners
    on_run_end: str | None = None  # the supervision graph (SPEC U6); None: the team supervises nothing
    implicit: bool = False

    def runs_on(self, capability: str) -> str:
        """The mission workflow's ``runner`` input: its ``runs-on`` as JSON, for ``fromJSON`` in the workflow."""
        return json.dumps(self.runners.get(capability) or self.runners.get("default") or "ubuntu-latest")


class TeamDefaults(BaseModel):
    """The top-level keys a team inherits; also the whole of the implicit team."""

    gatekeepers: list[str]
    graphsets: list[str]
    default_graph: str
    autopilot: bool
    runners: Runners
    concurrency: int | None = None  # only the implicit team's: a repository without `teams:` is not limited


def settle(name: str, team: TeamConfig, defaults: TeamDefaults) -> TeamSettings:
    """A written team with the top-level keys filled in where it left them out."""
    return TeamSettings(
        name=name,
        roster=Team(name=name, roles=team.roles),
        gatekeepers=defaults.gatekeepers if team.gatekeepers is None else team.gatekeepers,
        graphsets=defaults.graphsets if team.graphsets is None else team.graphsets,
        default_graph=team.default_graph or defaults.default_graph,
        auto_accept=team.auto_accept,
        autopilot=defaults.autopilot if team.autopilot is None else team.autopilot,
        separate_duties=team.gates is not None and team.gates.separate_duties,  # not top-level: local `gates:`
        concurrency=team.concurrency,
        satellites=list(team.satellites),
        accepts_requests=team.accepts_requests,
        runners=defaults.runners if team.runners is None else team.runners,
        on_run_end=team.on_run_end,
    )


def implicit_team(defaults: TeamDefaults) -> TeamSettings:
    """The team of a repository whose file has no ``teams:``: today's behaviour, named ``default``."""
    team = settle(IMPLICIT_TEAM, TeamConfig(), defaults)
    return team.model_copy(update={"implicit": True, "concurrency": defaults.concurrency})


TEAM_LABEL = "team:"


class TeamUnknown(InterlockError):
    """A ``team:<name>`` label names no team of the repository: nothing starts, and the issue is told why."""


def labelled_team(teams: list[TeamSettings], labels: Sequence[str]) -> TeamSettings | None:
    """The team a ``team:<name>`` label of the issue names; ``None`` without one."""
    wanted = next((label[len(TEAM_LABEL) :] for label in labels if label.startswith(TEAM_LABEL)), None)
    if wanted is None:
        return None
    found = next((team for team in teams if team.name == wanted), None)
    if found is None:
        known = ", ".join(f"`{team.name}`" for team in teams)
        raise TeamUnknown(f"the label `{TEAM_LABEL}{wanted}` names no team of this repository (its teams: {known})")
    return found


def graph_folders(teams: list[TeamSettings], labels: Sequence[str]) -> list[str]:
    """Where a run's graph is looked for, in order: the labelled team's graphsets, else every team's (the
    default team's first), each folder once. The bundled library comes after them, as before teams."""
    named = labelled_team(teams, labels)
    chosen = [named] if named is not None else teams
    return list(dict.fromkeys(folder for team in chosen for folder in team.graphsets))


def choose_team(teams: list[TeamSettings], labels: Sequence[str], holder: str | None) -> TeamSettings:
    """Which team a run belongs to (issue 13): a ``team:<name>`` label, else the first team whose graphsets
    hold the run's graph (``holder``, the folder it was found in; ``None`` for the bundled library), else the
    repository's default team: the first, or the implicit one."""
    named = labelled_team(teams, labels)
    if named is not None:
        return named
    holding = next((team for team in teams if holder is not None and holder in team.graphsets), None)
    return holding or teams[0]


def team_named(teams: list[TeamSettings], name: str) -> TeamSettings:
    """A run's team by the name its record keeps; the default team for a run older than teams (``""``) or
    whose team has left the configuration since it started."""
    return next((team for team in teams if team.name == name), teams[0])
