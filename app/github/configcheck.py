"""``interlock config check``: a repository configuration with every graph of every graphset its teams attach
to, validated against each team's roster (issue 13; SPEC G3, G4, G6), every problem at once.

The graphs come from a ``GraphSource`` (a folder of a checkout, or the repository on GitHub through the App's
client), so the same checks serve ``--file`` and ``--repo``. A capability no role of a team carries is a
warning naming who takes it at run time: the full-authority role, or nobody (SPEC G4). The implicit team of a
file without ``teams:`` has no roster, so its graphs are checked without capability warnings, as today.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from app.engine.errors import InterlockError
from app.engine.findings import Finding, FindingCode, error, ok, warning
from app.engine.graph.validate import validate_graph
from app.engine.team import Team
from app.github.client import Installation
from app.github.config import ConfigInvalid, RepoConfig
from app.github.extends import Layers, folder_home, folder_place
from app.github.teams import TeamSettings
from app.graphset import MAX_GRAPH_BYTES, find_graph
from app.inputfile import InputUnreadable, parse_json_text, read_input_bytes

GraphSource = Callable[[str], dict[str, bytes | str] | None]  # folder -> .json files (str: why unreadable); None: none
FIX_CONFIG = (
    'correct .github/interlock.yml; its keys are in Interlock\'s docs, "Configuration reference" (docs/reference/)'
)


def config_problems(exc: ConfigInvalid, subject: str) -> list[Finding]:
    """A refused configuration, one finding per problem."""
    return [error(FindingCode.REPO_CONFIG, subject, problem, FIX_CONFIG) for problem in exc.problems]


def layers_findings(layers: Layers, graphsets: GraphSource, library: list[Path], subject: str) -> list[Finding]:
    """Every problem of every file of a chain (``every_layer``), then the graphs checked against the teams when
    unknown keys were all that was wrong (issue 28: a misspelt key no longer hides a capability nobody carries)."""
    found = [error(FindingCode.REPO_CONFIG, subject, problem, FIX_CONFIG) for problem in layers.problems]
    if layers.config is None:
        return found
    checked = check_config(layers.config, graphsets, library, subject)
    return [*found, *checked[1:]] if found else checked  # no "valid" line for a configuration with problems


def check_config(config: RepoConfig, graphsets: GraphSource, library: list[Path], subject: str) -> list[Finding]:
    """Every team's graphs against its roster, and its default graph found somewhere."""
    teams = config.team_settings()
    names = ", ".join(team.name for team in teams)
    found = [ok(FindingCode.REPO_CONFIG, subject, f"valid: {len(teams)} team(s): {names}")]
    for team in teams:
        found += team_findings(team, graphsets, library)
    return found


def team_findings(team: TeamSettings, graphsets: GraphSource, library: list[Path]) -> list[Finding]:
    label = f"team {team.name}" + (" (implicit)" if team.implicit else "")
    roster = None if team.implicit else team.roster
    found: list[Finding] = []
    held: set[str] = set()
    for folder in team.graphsets:
        files = graphsets(folder)
        if files is None:
            found.append(ok(FindingCode.GRAPH, f"{label}: graphset {folder}", "no such folder (nothing to check)"))
            continue
        for name, raw in sorted(files.items()):
            held.add(name.removesuffix(".json"))
            found += graph_findings(label, f"{folder.rstrip('/')}/{name}", raw, roster)
    if team.default_graph not in held:
        found += _library_default(label, team.default_graph, library, roster)
    if team.on_run_end is not None and team.on_run_end not in held:
        found += _library_graph(label, "onRunEnd", team.on_run_end, library, roster)
    return found


def graph_findings(label: str, path: str, raw: bytes | str, roster: Team | None) -> list[Finding]:
    """One graph file: its errors, then its warnings (capability-uncarried among them), or that it is valid;
    ``raw`` is the reason when the file could not be read."""
    subject = f"{label}: {path}"
    if isinstance(raw, str):
        return [error(FindingCode.GRAPH, subject, f"cannot read it: {raw}", "make it a regular file of UTF-8 JSON")]
    try:
        validation = validate_graph(parse_json_text(path, raw), roster)
    except InputUnreadable as exc:
        return [error(FindingCode.GRAPH, subject, exc.reason, "correct the JSON")]
    fix_error = "correct the graph (`interlock validate` shows the same)"
    fix_warning = f"give the capability to a role of {label}, or accept the fallback (SPEC G4)"
    found = [error(FindingCode.GRAPH, subject, f"{i.code}: {i.message}", fix_error) for i in validation.errors]
    found += [warning(FindingCode.GRAPH, subject, f"{i.code}: {i.message}", fix_warning) for i in validation.warnings]
    return found or [ok(FindingCode.GRAPH, subject, "valid")]


def _library_default(label: str, name: str, library: list[Path], roster: Team | None) -> list[Finding]:
    """The default graph when no graphset of the team holds it: from the bundled library, or an error."""
    return _library_graph(label, "defaultGraph", name, library, roster)


def _library_graph(label: str, key: str, name: str, library: list[Path], roster: Team | None) -> list[Finding]:
    """A graph a team key names (``defaultGraph``, ``onRunEnd``) that no graphset of the team holds: from the
    bundled library, or an error."""
    try:
        graph = find_graph(name, library)
    except InterlockError as exc:
        message = f"{key} {name} is in none of the team's graphsets, nor in the bundled library ({exc})"
        written = f"{key} (default_graph)" if key == "defaultGraph" else key
        fix = f"add {name}.json to one of its graphsets, or set {written} to a graph that exists"
        return [error(FindingCode.GRAPH, f"{label}: {key} {name}", message, fix)]
    data = json.dumps(graph.model_dump(mode="json", by_alias=True)).encode()
    return graph_findings(label, f"{name} (bundled library)", data, roster)


def github_graphsets(api: Installation, repo: str, branch: str) -> GraphSource:
    """The graph files of a graphset folder on GitHub, read through the App's client; a folder an extended file
    names (``owner/name:folder``) from the default branch of the repository that declared it."""

    def read(folder: str) -> dict[str, bytes | str] | None:
        place = folder_place(api, repo, branch, folder)
        if place is None:
            return None
        home, path, ref = place
        names = api.folder(home, path, ref)
        if names is None:
            return None
        files = {name: api.file(home, f"{path.rstrip('/')}/{name}", ref) for name in names if name.endswith(".json")}
        return {name: "gone from the branch while reading" if raw is None else raw for name, raw in files.items()}

    return read


def local_graphsets(root: Path, inherited: GraphSource | None = None) -> GraphSource:
    """The graph files of a graphset folder of a checkout, ``root`` being the repository's top folder; a folder
    an extended file names is read by ``inherited`` (from GitHub), or is none without it."""

    def read(folder: str) -> dict[str, bytes | str] | None:
        if folder_home(folder)[0] is not None:
            return inherited(folder) if inherited is not None else None
        where = root / folder
        if not where.is_dir():
            return None
        found: dict[str, bytes | str] = {}
        for path in sorted(where.glob("*.json")):
            try:
                found[path.name] = read_input_bytes(path, MAX_GRAPH_BYTES)
            except InputUnreadable as exc:
                found[path.name] = exc.reason
        return found

    return read
