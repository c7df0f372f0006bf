"""The local configuration file read leniently: one finding per wrong key, with the key it probably meant.

``load_config`` refuses a bad file with one message; a preflight wants every problem as its own finding,
and still wants to check the agents and the base the file names, so that one run of ``interlock run`` or
``interlock doctor`` shows everything to fix.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.engine.errors import TeamInvalid
from app.engine.findings import Finding, FindingCode, error, ok
from app.engine.team import parse_team
from app.inputfile import InputUnreadable, parse_yaml, read_input_text
from app.local.config import LocalConfig
from app.local.repofile import RepoFileInvalid, is_repository_format, read_repository_data

TEXT_KEYS = ("agent", "decide", "advisor", "base")  # what the agents and base checks need from a bad file
KEYS_PAGE = 'the keys are listed in Interlock\'s docs, "Running locally: Configuration" (docs/local/)'
REPOSITORY_PAGES = (
    'Interlock\'s docs say how, "Configuration reference" (docs/reference/) and "Running locally: Configuration"'
)


@dataclass(frozen=True)
class ConfigReading:
    """The settings when the file is valid, else ``None`` and ``fallback``: the defaults with the values
    the file does give for the agents and the base, so that those can still be checked."""

    settings: LocalConfig | None
    findings: list[Finding] = field(default_factory=list)
    fallback: LocalConfig = field(default_factory=LocalConfig)

    @property
    def usable(self) -> LocalConfig:
        return self.settings or self.fallback


def config_findings(path: Path | None) -> ConfigReading:
    if path is None:
        return ConfigReading(LocalConfig())
    subject = f"config {path}"
    try:
        text = read_input_text(path)
    except InputUnreadable as exc:
        return ConfigReading(
            None, [error(FindingCode.CONFIG_FILE, subject, f"cannot read it: {exc.reason}", _path_fix())]
        )
    try:
        data: Any = parse_yaml(path, text) or {}
    except InputUnreadable as exc:
        return ConfigReading(None, [error(FindingCode.CONFIG_FILE, subject, exc.reason, "correct the YAML syntax")])
    if not isinstance(data, dict):
        message = f"a configuration is a mapping of keys, not {type(data).__name__}"
        return ConfigReading(None, [error(FindingCode.CONFIG_FILE, subject, message, KEYS_PAGE)])
    if is_repository_format(data, path):
        return _repository_reading(data, path, subject)
    findings = _team_findings(data, subject)
    if findings:
        data = {key: value for key, value in data.items() if key != "team"}
    elif isinstance(data.get("team"), dict):
        data = {**data, "team": parse_team(data["team"])}
    try:
        settings = LocalConfig.model_validate(data)
    except ValidationError as exc:
        findings += [_key_finding(problem, subject) for problem in exc.errors()]
    if findings:
        fallback = LocalConfig(**{key: data[key] for key in TEXT_KEYS if isinstance(data.get(key), str)})
        return ConfigReading(None, findings, fallback)
    return ConfigReading(settings, [ok(FindingCode.CONFIG_FILE, subject, "valid")])


def _repository_reading(data: dict[str, Any], path: Path, subject: str) -> ConfigReading:
    """A file in the repository's format (app/local/repofile.py): each problem by its path in the file."""
    try:
        file = read_repository_data(data, path)
    except RepoFileInvalid as exc:
        fix = f"correct it; {REPOSITORY_PAGES}"
        findings = [error(FindingCode.CONFIG_KEY, subject, problem, fix) for problem in exc.problems]
        fallback = LocalConfig(**{key: data[key] for key in TEXT_KEYS if isinstance(data.get(key), str)})
        return ConfigReading(None, findings, fallback)
    teams = ", ".join(team.name for team in file.teams())
    message = f"valid (the repository's format; team(s): {teams})"
    return ConfigReading(file.settings(file.team(None)), [ok(FindingCode.CONFIG_FILE, subject, message)])


def _team_findings(data: dict[str, Any], subject: str) -> list[Finding]:
    if "team" not in data:
        return []
    try:
        parse_team(data["team"])
    except TeamInvalid as exc:
        fix = "correct the roster: each role has a name and capabilities; at most one is fullAuthority"
        return [error(FindingCode.CONFIG_KEY, subject, f"team: {problem}", fix) for problem in exc.problems]
    return []


def _key_finding(problem: Any, subject: str) -> Finding:
    where = ".".join(str(part) for part in problem["loc"])
    if problem["type"] == "extra_forbidden":
        known = list(LocalConfig.model_fields)
        if len(problem["loc"]) > 1:
            return error(FindingCode.CONFIG_KEY, subject, f"unknown key `{where}`", f"remove it; {KEYS_PAGE}")
        close = difflib.get_close_matches(where, known, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        fix = f"{hint}remove or rename it; the keys are {', '.join(known)}"
        return error(FindingCode.CONFIG_KEY, subject, f"unknown key `{where}`", fix)
    return error(FindingCode.CONFIG_KEY, subject, f"`{where}`: {problem['msg']}", f"correct the value; {KEYS_PAGE}")


def _path_fix() -> str:
    return "pass --config with the path of a readable YAML file"
