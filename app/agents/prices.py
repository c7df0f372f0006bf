"""What a model's tokens cost, for agents that report tokens but no money (the chat APIs).

The prices ship in one dated file, ``prices.json`` beside this module, and the local configuration can
override or add models (``prices: {MODEL: {input: X, output: Y}}``, USD per million tokens). A cost worked
out from them is marked an estimate; a model with no price has an unknown cost (``None``), never 0 —
counting it as free would let it slip past a cost limit unseen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from app.engine.record import Usage

PER = 1_000_000
_VERSION_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class ModelPrice(BaseModel):
    """USD per million tokens, as the configuration writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, ModelPrice]
    as_of: str

    def with_overrides(self, overrides: Mapping[str, ModelPrice] | None) -> PriceTable:
        if not overrides:
            return self
        return PriceTable({**self.prices, **{name.lower(): p for name, p in overrides.items()}}, self.as_of)

    def find(self, model: str | None) -> ModelPrice | None:
        """The price of ``model``, also under its name without a date or ``-latest`` suffix, as APIs answer
        with ``gpt-4o-2024-08-06`` or ``claude-sonnet-4-5-20250929`` for what was asked as the bare name."""
        if not model:
            return None
        name = model.strip().lower()
        return self.prices.get(name) or self.prices.get(_VERSION_SUFFIX.sub("", name))

    def estimate(self, usage: Usage, *models: str | None) -> Usage:
        """``usage`` with its cost worked out from the first of ``models`` that has a price: an estimate; or
        with an unknown cost when none has."""
        price = next((found for found in map(self.find, models) if found is not None), None)
        if price is None:
            return usage.but(cost_usd=None, estimated=False)
        cost = (usage.input_tokens * price.input + usage.output_tokens * price.output) / PER
        return usage.but(cost_usd=round(cost, 6), estimated=True)


@cache
def shipped_prices() -> PriceTable:
    """The table in ``prices.json``, read once."""
    data = json.loads(resources.files("app.agents").joinpath("prices.json").read_text(encoding="utf-8"))
    models = {name.lower(): ModelPrice.model_validate(price) for name, price in data["models"].items()}
    return PriceTable(models, str(data["as_of"]))


def price_table(overrides: Mapping[str, ModelPrice] | None = None) -> PriceTable:
    return shipped_prices().with_overrides(overrides)
