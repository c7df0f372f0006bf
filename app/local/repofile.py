"""The repository's configuration file (``.github/interlock.yml``, app/github/config.py) driving a local run
(issue 13): the same teams, roles, graphsets, default graph, autopilot and concurrency as on GitHub.

How the two formats merge. A file is read in the repository's format when it is a ``.github/interlock.yml``
or has a key only that format has (``teams``, ``graphsets``, ``default_graph``, ``autopilot``, ...); any other
file is a local one (app/local/config.py), read as before. In the repository's format:

- its keys mean what they mean on GitHub, checked by the same model (``RepoConfig``), so a file that
  ``interlock config check --file`` accepts is one that ``interlock run`` accepts;
- the keys only a local run reads (``LOCAL_ONLY``: agent, decide, advisor_timeout_s, gates, context,
  timeout_s) are allowed beside them, checked as in a local file; ``team:`` (the local format's one team) is
  refused: the teams are under ``teams:``; any other key is refused with its path;
- the keys both formats have (base, policy, advisor, prices, upstream) mean the same in both;
- the run's team (``--team``, else the team whose graphset holds the graph, else the first team, as on
  GitHub) gives the roster whose roles do the missions, its ``concurrency`` (the local queue), its
  ``satellites`` (``owner/name`` is the folder ``../name``), and ``autopilot``: gates approved unless
  ``gates:`` or ``--gates`` say otherwise;
- the GitHub-only keys (trigger_label, graph_label_prefix, permission, workflow, gatekeepers, runners,
  autoAccept, acceptsRequests) are checked and have nothing to act on in a local run;
- ``extends:`` is refused: it names a GitHub repository, which a local run does not read.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.engine.graph.model import Graph
from app.engine.team import Team
from app.github.config import CONFIG_PATH, ConfigInvalid, RepoConfig, validate_config
from app.github.teams import TEAM_LABEL, TeamSettings, choose_team, graph_folders
from app.graphset import find_graph, library_dirs, load_graph, load_graphset
from app.local.config import ConfigError, GateMode, LocalConfig, config_data, parse_local_data

LOCAL_ONLY = ("agent", "decide", "advisor_timeout_s", "gates", "context", "timeout_s")
SHARED = ("base", "policy", "advisor", "prices", "upstream")
REPOSITORY_ONLY = frozenset(RepoConfig.model_fields) - frozenset(LocalConfig.model_fields)


class RepoFileInvalid(ConfigError):
    """A repository-format file refused, every problem named by its path (``problems``)."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        super().__init__(f"config {path}: {'; '.join(problems)}")
        self.problems = problems


@dataclass(frozen=True)
class RepoFile:
    """A file in the repository's format: its local-only keys (and the shared ones) and the repository's."""

    path: Path
    local: LocalConfig
    repo: RepoConfig

    def teams(self) -> list[TeamSettings]:
        return self.repo.team_settings()

    def team(self, name: str | None) -> TeamSettings:
        """The team called ``name`` (``--team``, or the one a run recorded); ``None``: the default team."""
        teams = self.teams()
        if name is None:
            return teams[0]
        found = next((team for team in teams if team.name == name), None)
        if found is None:
            known = ", ".join(team.name for team in teams)
            raise ConfigError(f"--team {name}: {self.path} has no team of that name (its teams: {known})")
        return found

    def team_or_default(self, roster: Team | None) -> TeamSettings:
        """The team a run recorded (its roster's name), else the default team: a team gone from the file since."""
        teams = self.teams()
        return next((team for team in teams if roster is not None and team.name == roster.name), teams[0])

    def settings(self, team: TeamSettings) -> LocalConfig:
        """The one model a local run is driven with: this file's local keys, and ``team``'s roster,
        concurrency, satellites and autopilot."""
        autopilot = GateMode.APPROVE if team.autopilot else None
        return self.local.model_copy(
            update={
                "team": None if team.implicit else team.roster,
                "concurrency": team.concurrency,
                "satellites": [beside(name) for name in team.satellites],
                "gates": self.local.gates or autopilot,
            }
        )


def beside(satellite: str) -> str:
    """Where a local run finds the satellite ``owner/name`` of the repository's file: the folder ``../name``
    beside the repository, as several clones in one folder sit (SPEC U7)."""
    return str(Path(os.pardir) / satellite.rsplit("/", 1)[-1])


def is_repository_format(data: dict[str, Any], path: Path) -> bool:
    own = path.name == Path(CONFIG_PATH).name and path.parent.name == Path(CONFIG_PATH).parent.name
    return own or bool(REPOSITORY_ONLY & set(data))


def parse_either(content: bytes, path: Path) -> tuple[LocalConfig, RepoFile | None]:
    """The settings of a file in either format (its default team's, for the repository's format), and the
    repository-format reading when it is one, for choosing another team."""
    data = config_data(content, path)
    if isinstance(data, dict) and is_repository_format(data, path):
        file = read_repository_data(data, path)
        return file.settings(file.team(None)), file
    return parse_local_data(data, path), None


def read_repository_data(data: dict[str, Any], path: Path) -> RepoFile:
    """A repository-format file with the local-only keys allowed; every problem at once, by its path."""
    problems = [_unknown(key) for key in data if key not in RepoConfig.model_fields and key not in LOCAL_ONLY]
    repo: RepoConfig | None = None
    try:
        repo = validate_config({k: v for k, v in data.items() if k in RepoConfig.model_fields}, str(path))
    except ConfigInvalid as exc:
        problems += [problem.removeprefix(f"{path}: ") for problem in exc.problems]
    local: LocalConfig | None = None
    try:
        local = LocalConfig.model_validate({key: value for key, value in data.items() if key in LOCAL_ONLY})
    except ValidationError as exc:
        problems += [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    if repo is not None and repo.extends:
        problems.append(
            f"extends: {repo.extends}: a local run does not read other repositories, so it cannot follow extends "
            "(it is followed on GitHub): write the keys you need in this file, or give --config another file"
        )
    if problems or repo is None or local is None:
        raise RepoFileInvalid(path, problems)
    return RepoFile(path, local.model_copy(update={key: getattr(repo, key) for key in SHARED}), repo)


def _unknown(key: str) -> str:
    if key == "team":
        return "team: the one team of a local file; in the repository's format the teams are under `teams:`"
    known = sorted([*RepoConfig.model_fields, *LOCAL_ONLY])
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"{key}: unknown key{hint}; the keys are {', '.join(known)}"


def find_team_graph(reference: str | None, file: RepoFile, team: str | None, root: Path) -> tuple[Graph, LocalConfig]:
    """The graph of a run and the settings of its team. ``reference`` is a graph file or a graph name, looked
    for in the team's graphsets (``--team``), else in every team's, then in the bundled library; without it,
    the team's ``defaultGraph``. The team is ``--team``, else the one whose graphset holds the graph, else
    the first (app/github/teams.py ``choose_team``, as on GitHub)."""
    named = file.team(team) if team is not None else None
    labels = [f"{TEAM_LABEL}{team}"] if team is not None else []
    teams = file.teams()
    folders = graph_folders(teams, labels)
    graph, holder = _graph_in(reference or (named or teams[0]).default_graph, folders, root)
    return graph, file.settings(choose_team(teams, labels, holder))


def _graph_in(reference: str, folders: list[str], root: Path) -> tuple[Graph, str | None]:
    """The graph, and the graphset folder (as the file writes it) that holds it; ``None`` for a file
    elsewhere or a graph of the bundled library."""
    candidate = Path(reference)
    if candidate.is_file() or reference.endswith(".json"):
        graph = load_graph(candidate)
        where = candidate.resolve().parent
        return graph, next((folder for folder in folders if (root / folder).resolve() == where), None)
    for folder in folders:
        if (root / folder).is_dir():
            graphs = load_graphset(root / folder)
            if reference in graphs:
                return graphs[reference], folder
    return find_graph(reference, library_dirs(), paths=False), None
