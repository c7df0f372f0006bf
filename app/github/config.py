"""Repository configuration, like Probot's: defaults merged with ``.github/interlock.yml`` from the default
branch only (a pull request cannot change how its own repository is governed).

```yaml
trigger_label: feature-request   # the label that starts a run
graph_label_prefix: "graph:"     # graph:<name> picks the graph
permission: write                # who may start and steer runs: write, maintain or admin
base: develop                    # run branches start here
default_graph: feature
graphsets: [.github/interlock/graphs]   # graph files in the repository; the bundled library after them
workflow: interlock.yml          # the workflow each mission is dispatched to
gatekeepers: [alice, bob]        # review requested at gates
autopilot: false
policy: {maxCalls: 30}
advisor: "openai:gpt-4o-mini"    # asked once when a mission ends badly: retry, revise or escalate (SPEC E4)
prices: {my-model: {input: 0.5, output: 1.5}}   # USD per million tokens over the shipped table, for HTTP agents
upstream: [octo/lib, octo-tools/*]   # where a NEEDS_UPSTREAM request may be filed; default: nowhere (SPEC U3, GH9)
teams: {core: {roles: {dev: {capabilities: [coding]}}}}   # app/github/teams.py; none: one implicit team
extends: octo/.github             # inherit that repository's configuration (app/github/extends.py)
```
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from app.agents.prices import ModelPrice
from app.engine.errors import InterlockError
from app.engine.graph.model import Policy
from app.engine.verdict import UPSTREAM_PATTERN
from app.github.config_keys import UNKNOWN, suggestion, without_unknown
from app.github.teams import TeamConfig, TeamDefaults, TeamName, TeamSettings, implicit_team, settle
from app.inputfile import InputUnreadable, parse_yaml_text

CONFIG_PATH = ".github/interlock.yml"
CONFIG_LIMIT = 1024 * 1024  # the most GitHub's contents API returns inline; a configuration is a few lines
# a branch name git accepts and a URL path carries as it is (`?`, `#`, `%` and spaces would not be)
BRANCH_NAME = re.compile(r"[A-Za-z0-9_.+@-]+(?:/[A-Za-z0-9_.+@-]+)*", re.ASCII)
WORKFLOW_FILE = re.compile(r"[A-Za-z0-9_.-]+\.ya?ml", re.ASCII)  # a file of .github/workflows, by its name
EXTENDS_PATTERN = r"^([A-Za-z0-9][A-Za-z0-9-]{0,38}/)?[A-Za-z0-9._-]{1,100}(:[A-Za-z0-9._/-]{1,255})?$"
PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}


class ConfigInvalid(InterlockError):
    """A configuration refused; ``problems`` lists each problem on its own (``interlock config check`` shows
    every one), the message joins them."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]
        self.known_only: dict[str, Any] | None = None  # the file without its unknown keys, when only they were wrong


class RepoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trigger_label: str = Field("feature-request", description="the issue label that starts a run")
    graph_label_prefix: str = Field("graph:", description="a label `<prefix><name>` on the issue picks the graph")
    permission: str = Field(
        "write",
        pattern="^(write|maintain|admin)$",
        description="the least repository permission that may start and steer runs: write, maintain or admin",
    )
    base: str = Field("develop", description="the branch run branches start from and pull requests go to")
    default_graph: str = Field("feature", description="the graph of a run whose issue names none")
    graphsets: list[str] = Field(
        default_factory=lambda: [".github/interlock/graphs"],
        description="folders of graph files in the repository, searched before the bundled library; "
        "default `[.github/interlock/graphs]`",
    )
    workflow: str = Field("interlock.yml", description="the file in .github/workflows each mission is dispatched to")
    gatekeepers: list[str] = Field(default_factory=list, description="the people asked to review at a gate")
    autopilot: bool = Field(False, description="gates pass on their own, recorded as autopilot (SPEC H4)")
    concurrency: int | None = Field(
        None, ge=1, description="runs at once of a repository without `teams:` (SPEC U5); left out, no limit"
    )
    policy: Policy | None = Field(None, description="run budgets, in place of the graph's own policy (SPEC P1)")
    advisor: str | None = Field(
        None,
        min_length=1,
        description="agent spec of the advisor; written into each advisor order, which the job runs",
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="USD per million tokens by model, over the shipped price table; written into each order",
    )
    upstream: list[Annotated[str, Field(pattern=UPSTREAM_PATTERN)]] = Field(
        default_factory=list,
        description="repositories a NEEDS_UPSTREAM request may be filed in: owner/repo or owner/*; none by default",
    )
    runners: dict[str, str | list[str]] = Field(
        default_factory=dict,
        description="runs-on per capability (a label or a list of self-hosted labels); `default` for the rest",
    )
    board_issue: bool = Field(
        True,
        strict=True,  # `true` or `false` as YAML writes them: a quoted "yes" or a 1 is refused, not read as on
        description='keep a pinned "Interlock board" issue current (one more content-creating request a transition '
        "whose table changed); `false` turns it off; the board on the state branch is kept either way",
    )

    archive_after_days: int = Field(
        30,
        ge=0,
        le=36500,
        strict=True,
        description="days after a run ended (done or cancelled) before `interlock archive` packs its files on the "
        "state branch into one archive file (the scheduled workflow interlock-archive.yml runs it); 0: never",
    )

    @field_validator("base")
    @classmethod
    def _branch_name(cls, value: str) -> str:
        """The base goes into GitHub's URLs and pull requests as written: `develop?x=1` was read as `develop` by
        the start's lookup, and every later step (the gate's pull request) failed for good."""
        parts = value.split("/")
        if not BRANCH_NAME.fullmatch(value) or any(p.startswith(".") or p.endswith((".", ".lock")) for p in parts):
            raise ValueError("not a branch name: letters, digits and `_.+@-`, in parts joined by `/`")
        return value

    @field_validator("workflow")
    @classmethod
    def _workflow_file(cls, value: str) -> str:
        """The dispatch's URL carries it as written and a job's end is matched on `.github/workflows/<it>`."""
        if not WORKFLOW_FILE.fullmatch(value) or value.startswith("."):
            raise ValueError("not the file name of a workflow in .github/workflows (like `interlock.yml`)")
        return value

    extends: str | None = Field(
        None,
        pattern=EXTENDS_PATTERN,
        description="owner/repo[:path] (or repo, of the same owner) whose configuration this one inherits",
    )
    teams: dict[TeamName, TeamConfig] | None = Field(
        None, description="the repository's teams by name, the first being its default team; none: one implicit team"
    )

    @model_validator(mode="after")
    def _teams_coherent(self) -> RepoConfig:
        if self.teams is not None and not self.teams:
            raise ValueError("teams: name at least one team, or leave the key out for the implicit team")
        takers = [name for name, team in (self.teams or {}).items() if team.accepts_requests]
        if len(takers) > 1:
            raise ValueError(f"teams: only one team may set acceptsRequests, found {', '.join(takers)}")
        return self

    def team_settings(self) -> list[TeamSettings]:
        """Every team, with the top-level keys filled in where it left them out; the default team first."""
        defaults = TeamDefaults(
            gatekeepers=self.gatekeepers,
            graphsets=self.graphsets,
            default_graph=self.default_graph,
            autopilot=self.autopilot,
            runners=self.runners,
            concurrency=self.concurrency,
        )
        if self.teams is None:
            return [implicit_team(defaults)]
        return [settle(name, team, defaults) for name, team in self.teams.items()]

    def runs_on(self, capability: str) -> str:
        """The mission workflow's ``runner`` input: its ``runs-on`` as JSON, for ``fromJSON`` in the workflow."""
        return json.dumps(self.runners.get(capability) or self.runners.get("default") or "ubuntu-latest")

    def allows(self, permission: str) -> bool:
        return PERMISSION_RANK.get(permission, 0) >= PERMISSION_RANK[self.permission]


def parse_config(text: bytes | None) -> RepoConfig:
    """Defaults when there is no file; a clear error naming every problem when the file is wrong, read with
    app/inputfile.py's limits, since anyone who can push to the default branch writes it."""
    return validate_config(read_config_data(text), CONFIG_PATH)


def read_config_data(text: bytes | None, source: str = CONFIG_PATH) -> dict[str, Any]:
    """The file's YAML as a mapping (empty when there is no file); ``source`` names the file in errors."""
    if text is None or not text.strip():
        return {}
    try:
        data: Any = parse_yaml_text(source, text, CONFIG_LIMIT)
    except InputUnreadable as exc:  # not YAML, not UTF-8, too large, nested too deeply
        raise ConfigInvalid(str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigInvalid(f"{source}: file: a mapping of keys is expected, found {type(data).__name__}")
    return data


def trigger_label_of(text: bytes | None) -> str | None:
    """The trigger label an invalid file still names (its own ``trigger_label``, else the default), so that a
    start it refuses can be answered on the issue; ``None`` when the file cannot be read as YAML at all."""
    try:
        data = read_config_data(text)
    except ConfigInvalid:
        return None
    label = data.get("trigger_label", RepoConfig.model_fields["trigger_label"].default)
    return label if isinstance(label, str) else None


def validate_config(data: dict[str, Any], source: str = CONFIG_PATH) -> RepoConfig:
    """The configuration from parsed data, every problem named by its path in ``source``."""
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as exc:
        problems = [f"{where(e['loc'], data) or 'file'}: {_said(e)}" for e in exc.errors()]
        invalid = ConfigInvalid(f"{source}: {'; '.join(problems)}", [f"{source}: {p}" for p in problems])
        unknown = [e for e in exc.errors() if e["type"] == UNKNOWN]
        if len(unknown) == len(exc.errors()):  # the file without them may be checked on (config check)
            invalid.known_only = without_unknown(data, [dict(e) for e in unknown])
        raise invalid from None


@cache
def _schema() -> dict[str, Any]:
    return RepoConfig.model_json_schema(by_alias=True, mode="validation")


def _said(problem: Any) -> str:
    """pydantic's message, with the key a misspelt one probably meant (app/github/config_keys.py)."""
    hint = suggestion(tuple(problem["loc"]), _schema()) if problem["type"] == UNKNOWN else ""
    return _message(problem["msg"]) + hint


def where(loc: tuple[int | str, ...], data: Any) -> str:
    """The dotted path of a problem in the file as written: a role given in a mapping is named by its key
    (``teams.core.roles.dev.colour``), not by its place in the list it was turned into."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, dict) and 0 <= part < len(node):
            part = list(node)[part]
        parts.append(str(part))
        node = node.get(part) if isinstance(node, dict) else node[part] if _indexes(node, part) else None
    return ".".join(parts)


def _message(text: str) -> str:
    return text.removeprefix("Value error, ")


def _indexes(node: Any, part: int | str) -> bool:
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
