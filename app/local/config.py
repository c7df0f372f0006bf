"""Configuration of a local run (``--config FILE``): which agent does what, gates, policy, context tiers.

```yaml
agent: claude                 # default agent for every role: a preset or any command line
decide: "openai:gpt-4o-mini"  # the cheap model of decide nodes (default: the default agent)
advisor: "./advise.sh"        # optional: asked once when a mission ends badly (SPEC E4)
advisor_timeout_s: 60         # seconds the advisor may take; slower is no advice
base: develop
gates: ask                    # ask | approve | stop
policy: {maxCalls: 30}
context: {intact: 2, cut: 4, cut_bytes: 2000}
prices: {gpt-4o-mini: {input: 0.15, output: 0.6}}  # USD per million tokens, over app/agents/prices.json
upstream: [acme/lib, acme-tools/*]  # where a NEEDS_UPSTREAM request may go; default: nowhere (SPEC U3, GH9)
satellites: [../docs]         # other repositories on disk where the work may land (SPEC U7, app/local/satellites.py)
team:
  roles:
    - {name: dev, capabilities: [coding, testing], agent: codex, model: o4-mini}
    - {name: lead, fullAuthority: true, capabilities: [planning, review], tools: [Read, Grep]}
concurrency: 1                # runs of the team at once in this clone; left out, no limit (SPEC U5)
```

The repository's own file, ``.github/interlock.yml`` with ``teams:``, drives a local run too:
app/local/repofile.py says how its keys and these merge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agents.base import Agent
from app.agents.prices import ModelPrice
from app.agents.spec import agent_from_spec
from app.engine.context import Tiers
from app.engine.errors import InterlockError
from app.engine.graph.model import Graph, Policy
from app.engine.record import GateMode as GateMode  # the shells name it with the rest of the configuration
from app.engine.team import Role, Team, parse_team
from app.engine.verdict import UPSTREAM_PATTERN
from app.inputfile import InputUnreadable, decode_utf8, parse_yaml, read_input_bytes
from app.runner.orders import role_for as team_role


class ConfigError(InterlockError):
    pass


class LocalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str | None = None  # no default: the demo agent only when named (`interlock demo`, `--agent demo`)
    decide: str | None = None
    advisor: str | None = Field(None, min_length=1)
    advisor_timeout_s: float = Field(60.0, gt=0)
    base: str = "develop"
    gates: GateMode | None = None
    policy: Policy | None = None
    context: Tiers = Field(default_factory=Tiers)
    team: Team | None = None
    timeout_s: float = 3600.0
    prices: dict[str, ModelPrice] = Field(default_factory=dict)  # USD per million tokens, over prices.json
    upstream: list[Annotated[str, Field(pattern=UPSTREAM_PATTERN)]] = Field(default_factory=list)
    concurrency: int | None = Field(None, ge=1)  # runs of the team at once in this clone (app/local/queue.py)
    satellites: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)  # folders, from the repo


def load_config(path: Path | None) -> LocalConfig:
    return LocalConfig() if path is None else parse_config(read_config_bytes(path), path)


def read_config_bytes(path: Path) -> bytes:
    try:
        return read_input_bytes(path)
    except InputUnreadable as exc:
        raise ConfigError(f"cannot read config {path}: {exc.reason}") from None


def parse_config(content: bytes, path: Path) -> LocalConfig:
    """The configuration in ``content`` (the bytes of ``path``, read once so that they are what is hashed), in
    the local format; ``parse_either`` (app/local/repofile.py) reads the repository's format as well."""
    return parse_local_data(config_data(content, path), path)


def config_data(content: bytes, path: Path) -> Any:
    try:
        return parse_yaml(path, decode_utf8(path, content)) or {}
    except InputUnreadable as exc:
        raise ConfigError(f"cannot read config {path}: {exc.reason}") from None


def parse_local_data(data: Any, path: Path) -> LocalConfig:
    """The local format: one ``team:`` and the keys above."""
    try:
        if isinstance(data, dict) and isinstance(data.get("team"), dict):
            data = {**data, "team": parse_team(data["team"])}
        return LocalConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"config {path}: {problems}") from None


def role_for(config: LocalConfig, capability: str) -> Role | None:
    """The role that does a step of ``capability``: the same rule as on GitHub (``app/runner/orders.py``)."""
    return team_role(config.team, capability)


def agent_spec(config: LocalConfig, capability: str) -> str | None:
    """The agent that does a step of ``capability``: its role's, else the default; ``None`` if neither."""
    role = role_for(config, capability)
    return role.agent if role and role.agent else config.agent


def decide_spec(config: LocalConfig) -> str | None:
    return config.decide or config.agent


def agent_for(config: LocalConfig, capability: str) -> tuple[Agent, Role | None]:
    spec = agent_spec(config, capability)
    if not spec:
        raise ConfigError(f"no agent does the steps of capability {capability!r}: {WAYS_TO_NAME_AN_AGENT}")
    return agent_from_spec(spec, config.prices), role_for(config, capability)


WAYS_TO_NAME_AN_AGENT = """name the agent in one of three ways:
  --agent SPEC          on the command line: claude, codex, aider, openai:MODEL, or any command line
                        (`--agent demo` is the scripted agent of `interlock demo`: it does no real work)
  agent: SPEC           at the top of the --config file
  team: roles: agent:   on each role of the --config file's team that carries a step of the graph"""


def missing_agent_problem(config: LocalConfig, graph: Graph) -> str | None:
    """Why ``config`` cannot run ``graph`` for want of an agent, or ``None``.

    Checked before a run is created: a run that stops at its first mission for want of an agent would leave
    a branch and a journal behind, and falling back to the demo agent would make up work nobody did.
    """
    steps = [node for node in graph.nodes if node.check is None]
    capabilities = sorted({node.capability for node in steps if not agent_spec(config, node.capability)})
    deciding = [n.stage for n in graph.nodes if n.decides] if not decide_spec(config) else []
    problems: list[str] = []
    if capabilities:
        problems.append(f"no agent does the steps of capability {', '.join(capabilities)}")
    if deciding:
        problems.append(f"no agent makes the decisions of {', '.join(deciding)} (`decide:` or the default agent)")
    if not problems:
        return None
    return f"{'; '.join(problems)}; {WAYS_TO_NAME_AN_AGENT}"


def describe(config: LocalConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", by_alias=True)
