"""Teams: roles that carry capabilities (SPEC U1). The validator needs them for ``capability-uncarried``."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, model_validator

from app.engine.errors import TeamInvalid
from app.engine.graph.model import StrictModel

MAX_TOKENS_BOUND = 1_000_000  # tokens: more than any model writes in one answer (the largest write ~128k)


class Role(StrictModel):
    """An agent template: what it may do (capabilities, tools) and who does it (agent, model)."""

    name: str = Field(min_length=1, description="the role's name, unique in its team")
    capabilities: list[str] = Field(default_factory=list, description="the nodes' capabilities this role carries")
    full_authority: bool = Field(
        False, alias="fullAuthority", description="takes every step no other role carries; one role a team at most"
    )
    system_prompt: str = Field("", alias="systemPrompt", description="opens each prompt of this role's missions")
    tools: list[str] = Field(
        default_factory=list,
        description="the agent's tool whitelist (a tool not listed is not offered); none: the agent's defaults",
    )
    deliverables: list[str] = Field(
        default_factory=list, description="what the role hands over, named in each prompt of its missions"
    )
    agent: str | None = Field(None, description="the agent spec that does this role's missions")
    model: str | None = Field(None, description="the model the agent is asked to use")
    # The longest answer, in tokens, an HTTP agent (`openai:`, `anthropic:`) may write for this role; unset:
    # app.agents.base.DEFAULT_MAX_TOKENS. A small model's context needs a small bound (issue 17); above
    # MAX_TOKENS_BOUND no model answers, so such a bound is a typo, refused (issue 28).
    max_tokens: int | None = Field(
        None, alias="maxTokens", ge=1, le=MAX_TOKENS_BOUND, description="the longest answer an HTTP agent may write"
    )


class Team(StrictModel):
    """A set of roles; at most one is full-authority and takes the steps no other role carries (SPEC G4)."""

    name: str = "team"
    roles: list[Role]

    @model_validator(mode="after")
    def _one_full_authority(self) -> Team:
        chiefs = [role.name for role in self.roles if role.full_authority]
        if len(chiefs) > 1:
            raise ValueError(f"only one role may be full-authority, found {', '.join(chiefs)}")
        return self

    def carrier(self, capability: str) -> Role | None:
        """The first role that carries ``capability``, or ``None``."""
        return next((role for role in self.roles if capability in role.capabilities), None)

    def full_authority_role(self) -> Role | None:
        return next((role for role in self.roles if role.full_authority), None)

    def assignee(self, capability: str) -> Role | None:
        """Who does a step at run time: its carrier, else the full-authority role (SPEC G4)."""
        return self.carrier(capability) or self.full_authority_role()


def parse_team(data: Any) -> Team:
    """A team from parsed YAML/JSON. Accepts ``roles`` as a list or as a mapping of name to role."""
    if isinstance(data, dict) and isinstance(data.get("roles"), dict):
        data = {**data, "roles": [_named(name, role) for name, role in data["roles"].items()]}
    try:
        return Team.model_validate(data)
    except ValidationError as exc:
        raise TeamInvalid([_describe(err) for err in exc.errors()]) from None


def _named(name: Any, role: Any) -> Any:
    return {"name": name, **role} if isinstance(role, dict) else role


def _describe(err: Any) -> str:
    where = ".".join(str(part) for part in err["loc"]) or "roster"
    return f"{where}: {err['msg']}"
