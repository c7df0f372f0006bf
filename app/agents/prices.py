"""What a model's tokens cost, for agents that report tokens but no money (the chat APIs).

The prices ship in one dated file, ``prices.json`` beside this module, and the local configuration can
override or add models (``prices: {MODEL: {input: X, output: Y}}``, USD per million tokens). A cost worked
out from them is marked an estimate; a model with no price has an unknown cost (``None``), never 0 —
counting it as free would let it slip past a cost limit unseen. A server of your own (a base URL on a loopback
or private address, or ``localhost``) is priced by the configuration alone: the model it serves under a
shipped name is not the provider's, and what it costs (0 included) is yours to say.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from app.engine.cost_source import CostSource
from app.engine.record import Usage

PER = 1_000_000
_VERSION_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class ModelPrice(BaseModel):
    """USD per million tokens, as the configuration writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="US dollars per million input tokens")
    output: float = Field(ge=0, description="US dollars per million output tokens")


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, ModelPrice]
    as_of: str
    configured: frozenset[str] = frozenset()  # the models the configuration priced, lower case

    def with_overrides(self, overrides: Mapping[str, ModelPrice] | None) -> PriceTable:
        if not overrides:
            return self
        given = {name.lower(): p for name, p in overrides.items()}
        return PriceTable({**self.prices, **given}, self.as_of, self.configured | given.keys())

    def for_endpoint(self, base_url: str) -> PriceTable:
        """The prices that hold for a server at ``base_url``: all of them, or for a server of your own only
        those the configuration gave (issue 17: a local model is never priced by default, 0 included)."""
        if not is_own_server(base_url):
            return self
        return PriceTable({name: self.prices[name] for name in self.configured}, self.as_of, self.configured)

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
        named = next((name for name in models if self.find(name) is not None), None)
        price = self.find(named)
        if price is None:
            return usage.but(cost_usd=None, estimated=False, source=CostSource.UNKNOWN, prices_as_of="")
        cost = (usage.input_tokens * price.input + usage.output_tokens * price.output) / PER
        return usage.but(cost_usd=round(cost, 6), estimated=True, **self.source_of(str(named)))

    def source_of(self, model: str) -> dict[str, Any]:
        """Whose price of ``model`` this is (SPEC W3): the configuration's, or the shipped table's of its date."""
        name = model.strip().lower()
        if (name if name in self.prices else _VERSION_SUFFIX.sub("", name)) in self.configured:
            return {"source": CostSource.CONFIGURED, "prices_as_of": ""}
        return {"source": CostSource.PRICE_TABLE, "prices_as_of": self.as_of}


@cache
def shipped_prices() -> PriceTable:
    """The table in ``prices.json``, read once."""
    data = json.loads(resources.files("app.agents").joinpath("prices.json").read_text(encoding="utf-8"))
    models = {name.lower(): ModelPrice.model_validate(price) for name, price in data["models"].items()}
    return PriceTable(models, str(data["as_of"]))


def price_table(overrides: Mapping[str, ModelPrice] | None = None) -> PriceTable:
    return shipped_prices().with_overrides(overrides)


def is_own_server(base_url: str) -> bool:
    """A base URL on ``localhost``, a loopback, private or link-local address: a server of your own, not a
    provider's API."""
    host = _host(base_url).strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    address = _address(host)
    return address is not None and (address.is_loopback or address.is_private or address.is_link_local)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` spells, in the forms the resolver takes too: IPv4's short and numeric ones (``127.1``,
    ``2130706433``, ``0x7f000001``) reach the same server as ``127.0.0.1``. ``None`` for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not host or not all(char in "0123456789abcdefx." for char in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""
