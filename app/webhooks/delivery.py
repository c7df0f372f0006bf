"""A webhook delivery, read leniently: only the fields a handler uses, and none of them required.

GitHub sends payloads of varying age and shape; a strict model of the whole payload rejects real
deliveries over fields nobody reads. Accessors here return ``None`` for what is absent, mistyped or not
safe to use (a repository name without ``/``, a login with control characters, a boolean or huge number);
the ``require`` methods raise ``MalformedDelivery`` instead, which the service answers with a 400 and a log
line — never a 5xx, which would say that a redelivery could succeed.
https://docs.github.com/en/webhooks/webhook-events-and-payloads
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}", re.ASCII)
LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}(\[bot\])?", re.ASCII)
LARGEST_NUMBER = 2**53  # GitHub's ids and numbers are JSON numbers that JavaScript reads exactly


T = TypeVar("T")


class MalformedDelivery(ValueError):
    """A delivery that lacks, or mistypes, a field its handler needs: refused with a 400, nothing changed."""


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
        return number_at(self.payload, "installation", "id", least=0)  # 0: app-less mode's one installation

    @property
    def repository(self) -> str | None:
        return repository_name(text_at(self.payload, "repository", "full_name"))

    @property
    def sender(self) -> str | None:
        return login(text_at(self.payload, "sender", "login"))

    def require_number(self, *path: str) -> int:
        """The positive integer at ``path`` (an issue or pull-request number), else ``MalformedDelivery``."""
        number: int = self.require(number_at(self.payload, *path), ".".join(path), "a positive integer")
        return number

    def require_sender(self) -> str:
        user: str = self.require(self.sender, "sender.login", "a GitHub login")
        return user

    def require(self, value: T | None, field: str, kind: str) -> T:
        if value is None:
            raise MalformedDelivery(f"{self.describe()}: `{field}` is missing or not {kind}")
        return value

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
    """The string at ``path``; a lone surrogate (JSON allows ``"\\ud800"``) becomes ``?``, since no file,
    comment or request body can carry it."""
    value = at(data, *path)
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", errors="replace").decode("utf-8")
    return value


def number_at(data: Any, *path: str, least: int = 1) -> int | None:
    """An integer from ``least`` to ``LARGEST_NUMBER``; a boolean is not a number here."""
    value = at(data, *path)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= LARGEST_NUMBER:
        return None
    return value


def list_at(data: Any, *path: str) -> list[Any]:
    value = at(data, *path)
    return value if isinstance(value, list) else []


def repository_name(value: str | None) -> str | None:
    """``owner/name`` as GitHub allows them; anything else (no ``/``, ``..``, control characters) is ``None``."""
    if value is None or not REPOSITORY.fullmatch(value) or {".", ".."} & set(value.split("/")):
        return None
    return value


def login(value: str | None) -> str | None:
    return value if value is not None and LOGIN.fullmatch(value) else None


def issue_labels(delivery: Delivery) -> list[str]:
    """The names of the labels the delivery's issue carries."""
    return [text_at(item, "name") or "" for item in list_at(delivery.payload, "issue", "labels")]


def when(value: Any) -> datetime:
    """A payload timestamp; the time it happened is what a redelivery repeats, so it keys staleness. One
    without a zone is UTC (GitHub's are), so that it compares with the record's times."""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return datetime.now(UTC)
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return datetime.now(UTC)
