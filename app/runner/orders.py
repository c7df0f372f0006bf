"""Mission orders: what the engine asked a job to do, stored on the state branch beside the run record.

A job must run exactly the prompt the engine assembled — the re-ask note, the amendments, the compacted
context as it was at dispatch — so the transition that dispatches a mission writes its order, and the job
reads it instead of rebuilding anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.agents.prices import ModelPrice
from app.engine.effects import AskAdvisor, AskDecision, DispatchMission
from app.engine.prompt import assemble_prompt, overflow_parts
from app.engine.record import Advice, MissionKind
from app.engine.team import Role, Team


@dataclass(frozen=True)
class Order:
    seq: int
    stage: str
    kind: MissionKind
    capability: str
    visit: int
    prompt: str
    check: str | None = None
    session_id: str | None = None
    agent: str | None = None  # the agent the order names (an advisor's, a role's); else the job's own
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)  # the repository's `prices:` (USD per Mtok)
    role: str | None = None  # the role that carries the mission's capability (SPEC U1, G4), if a team has one
    model: str | None = None  # the role's model; else the agent's own default
    tools: tuple[str, ...] = ()  # the role's tool whitelist; empty: no whitelist
    max_tokens: int | None = None  # the role's `maxTokens`, the bound of an HTTP agent's answer (issue 17)
    shorter_prompt: str | None = None  # the prompt with its context compacted harder, for a context overflow


def role_for(team: Team | None, capability: str) -> Role | None:
    """The role that does a step of ``capability``: its carrier in ``team``, else the team's full-authority
    role (SPEC G4); ``None`` without a team, and then a mission runs the job's (or the run's) default agent.
    Every shell asks this one function, so where the team comes from is the only thing a shell decides."""
    return team.assignee(capability) if team is not None else None


def mission_order(
    effect: DispatchMission | AskDecision | AskAdvisor,
    agent: str | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    role: Role | None = None,
) -> dict[str, Any]:
    """The order of one dispatched mission or call, as JSON-ready data; ``agent`` names who must answer it
    (the repository's advisor for an advisor's order); ``prices`` are the repository's own, over the shipped
    table, for the cost estimates of HTTP agents; ``role`` is who does a mission (``role_for``): its prompt,
    agent, model and tools go into the order, so the job runs them and not the workflow's default agent."""
    priced = {"prices": {model: price.model_dump() for model, price in prices.items()}} if prices else {}
    return {**_order_fields(effect, agent, role), **priced}


def _order_fields(
    effect: DispatchMission | AskDecision | AskAdvisor, agent: str | None, role: Role | None
) -> dict[str, Any]:
    if isinstance(effect, DispatchMission):
        return {
            "seq": effect.seq,
            "stage": effect.stage,
            "kind": effect.kind.value,
            "capability": effect.capability,
            "visit": effect.prompt.visit,
            "prompt": assemble_prompt(effect.prompt, role),
            "check": effect.check,
            "session_id": effect.session_id,
            **(_role_fields(role) if role is not None and effect.check is None else {}),
            **(_shorter_field(effect, role) if effect.check is None else {}),
        }
    kind = MissionKind.DECIDE if isinstance(effect, AskDecision) else MissionKind.ADVISOR
    prompt = effect.prompt if isinstance(effect, AskDecision) else effect.question
    return {
        "seq": effect.seq,
        "stage": effect.stage,
        "kind": kind.value,
        "capability": kind.value,
        "visit": 0,
        "prompt": prompt,
        "check": None,
        "session_id": None,
        **({"agent": agent} if agent else {}),
    }


HTTP_AGENTS = ("openai:", "anthropic:")  # the agent specs whose missions can overflow a model's context


def _shorter_field(effect: DispatchMission, role: Role | None) -> dict[str, Any]:
    """The prompt an HTTP agent sends once more when the server finds the first longer than the model's context
    (issue 17): the job cannot rebuild it, the order holds no context. None when nothing is left to cut, or when
    the role names an agent that is no chat API (an agent CLI reads its context itself): the order, written on
    the state branch at every mission, stays its size. Without a role's agent the job's own may be one: kept."""
    if role is not None and role.agent and not role.agent.startswith(HTTP_AGENTS):
        return {}
    parts = overflow_parts(effect.prompt)
    return {} if parts is None else {"shorter_prompt": assemble_prompt(parts, role)}


def _role_fields(role: Role) -> dict[str, Any]:
    """What a role puts in a mission's order: its name always, its agent, model and tools when it names them."""
    fields: dict[str, Any] = {"role": role.name}
    if role.agent:
        fields["agent"] = role.agent
    if role.model:
        fields["model"] = role.model
    if role.tools:
        fields["tools"] = list(role.tools)
    if role.max_tokens:
        fields["max_tokens"] = role.max_tokens
    return fields


def read_order(data: dict[str, Any]) -> Order:
    """An order read back; a missing or malformed field is a ``ValueError`` naming it."""
    try:
        return Order(
            seq=int(data["seq"]),
            stage=str(data["stage"]),
            kind=MissionKind(data["kind"]),
            capability=str(data["capability"]),
            visit=int(data.get("visit") or 0),
            prompt=str(data["prompt"]),
            check=data.get("check") if isinstance(data.get("check"), str) else None,
            session_id=data.get("session_id") if isinstance(data.get("session_id"), str) else None,
            agent=data.get("agent") if isinstance(data.get("agent"), str) and data.get("agent") else None,
            prices=_read_prices(data.get("prices")),
            role=_text(data.get("role")),
            model=_text(data.get("model")),
            tools=_read_tools(data.get("tools")),
            max_tokens=_positive(data.get("max_tokens")),
            shorter_prompt=_text(data.get("shorter_prompt")),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"the mission order has no valid {exc}") from None


def _positive(value: Any) -> int | None:
    """A bound of the order: a whole number above 0, else none (the agent's default)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _read_tools(data: Any) -> tuple[str, ...]:
    """The whitelist of an order; one that is not a list of names is refused, never read as no whitelist
    (which would let the agent use every tool)."""
    if data is None:
        return ()
    if not isinstance(data, list) or not all(isinstance(tool, str) and tool for tool in data):
        raise ValueError("the mission order has no valid 'tools'")
    return tuple(data)


def _read_prices(data: Any) -> dict[str, ModelPrice]:
    if not data:
        return {}
    try:
        return {str(model): ModelPrice.model_validate(price) for model, price in dict(data).items()}
    except (ValidationError, TypeError, ValueError):
        raise ValueError("the mission order has no valid 'prices'") from None


def parse_advice(answer: str) -> tuple[Advice | None, str]:
    """An advisor's answer: ``retry``, ``revise`` (with its instruction) or ``escalate``; anything else is
    no advice, and the default (escalation) stands (SPEC E4)."""
    words = answer.strip().split(maxsplit=1)
    advice = Advice.named(words[0].strip(".:,")) if words else None
    if advice is None:
        return None, ""
    return advice, (words[1].strip() if len(words) > 1 else "")
