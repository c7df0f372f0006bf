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
from app.engine.prompt import assemble_prompt
from app.engine.record import Advice, MissionKind


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
    agent: str | None = None  # the agent the order names (an advisor's); else the job's own
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)  # the repository's `prices:` (USD per Mtok)


def mission_order(
    effect: DispatchMission | AskDecision | AskAdvisor,
    agent: str | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
) -> dict[str, Any]:
    """The order of one dispatched mission or call, as JSON-ready data; ``agent`` names who must answer it
    (the repository's advisor for an advisor's order); ``prices`` are the repository's own, over the shipped
    table, for the cost estimates of HTTP agents."""
    priced = {"prices": {model: price.model_dump() for model, price in prices.items()}} if prices else {}
    return {**_order_fields(effect, agent), **priced}


def _order_fields(effect: DispatchMission | AskDecision | AskAdvisor, agent: str | None) -> dict[str, Any]:
    if isinstance(effect, DispatchMission):
        return {
            "seq": effect.seq,
            "stage": effect.stage,
            "kind": effect.kind.value,
            "capability": effect.capability,
            "visit": effect.prompt.visit,
            "prompt": assemble_prompt(effect.prompt),
            "check": effect.check,
            "session_id": effect.session_id,
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
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"the mission order has no valid {exc}") from None


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
