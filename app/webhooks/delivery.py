"""A webhook delivery, read leniently: only the fields a handler uses, and none of them required.

GitHub sends payloads of varying age and shape; a strict model of the whole payload rejects real
deliveries over fields nobody reads. Accessors here return ``None`` for what is absent or mistyped.
https://docs.github.com/en/webhooks/webhook-events-and-payloads
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Delivery:
    event: str
    delivery_id: str
    payload: dict[str, Any]

    @property
    def action(self) -> str | None:
        return text_at(self.payload, "action")

    @property
    def installation_id(self) -> int | None:
        value = at(self.payload, "installation", "id")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def repository(self) -> str | None:
        return text_at(self.payload, "repository", "full_name")

    @property
    def sender(self) -> str | None:
        return text_at(self.payload, "sender", "login")

    @property
    def sender_is_bot(self) -> bool:
        return text_at(self.payload, "sender", "type") == "Bot"

    def describe(self) -> str:
        action = f".{self.action}" if self.action else ""
        return f"{self.event}{action} {self.delivery_id} ({self.repository or 'no repository'})"


def at(data: Any, *path: str) -> Any:
    """The value at ``path`` in nested objects, or ``None`` if any step is missing or not an object."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def text_at(data: Any, *path: str) -> str | None:
    value = at(data, *path)
    return value if isinstance(value, str) else None
