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
team:
  roles:
    - {name: dev, capabilities: [coding, testing], agent: codex, model: o4-mini}
    - {name: lead, fullAuthority: true, capabilities: [planning, review], tools: [Read, Grep]}
```
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agents.base import Agent
from app.agents.spec import agent_from_spec
from app.engine.context import Tiers
from app.engine.errors import InterlockError
from app.engine.graph import Policy
from app.engine.team import Role, Team, parse_team


class GateMode(StrEnum):
    ASK = "ask"
    APPROVE = "approve"
    STOP = "stop"


class ConfigError(InterlockError):
    pass


class LocalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = "demo"
    decide: str | None = None
    advisor: str | None = Field(None, min_length=1)
    advisor_timeout_s: float = Field(60.0, gt=0)
    base: str = "develop"
    gates: GateMode | None = None
    policy: Policy | None = None
    context: Tiers = Field(default_factory=Tiers)
    team: Team | None = None
    timeout_s: float = 3600.0


def load_config(path: Path | None) -> LocalConfig:
    if path is None:
        return LocalConfig()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if isinstance(data, dict) and isinstance(data.get("team"), dict):
            data = {**data, "team": parse_team(data["team"])}
        return LocalConfig.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"config {path}: {problems}") from None


def role_for(config: LocalConfig, capability: str) -> Role | None:
    return config.team.assignee(capability) if config.team else None


def agent_for(config: LocalConfig, capability: str) -> tuple[Agent, Role | None]:
    role = role_for(config, capability)
    return agent_from_spec(role.agent if role and role.agent else config.agent), role


def describe(config: LocalConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", by_alias=True)
