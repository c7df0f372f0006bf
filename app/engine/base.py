"""The base of the engine's journal records: plain dataclasses inside, pydantic only at the journal boundary.

A transition builds and copies records many times; a pydantic model validates on every construction and
costs microseconds each time, which is most of a transition's budget. Records are therefore plain
dataclasses that the engine builds from values of the right type; a record read from a journal is
validated there, once, through ``journal_adapter`` (unknown keys refused, so a journal written by a newer
version is noticed rather than misread).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, dataclass_transform

from pydantic import ConfigDict, Field, TypeAdapter

OMITTED_WHEN_EMPTY: Any = Field(exclude_if=lambda value: not value)
"""Marks a field added to a record after records were hashed (SPEC J6): the journal leaves it out while it is
empty, so a record written before the field existed encodes, and hashes, the same when ``interlock verify``
replays it on today's engine (else every older run would show "engine drift" at its first transition)."""


@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
class Record:
    """Subclasses are keyword-only dataclasses; pydantic reads ``__pydantic_config__`` when validating."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(kw_only=True)(cls)

    def but(self, **changes: Any) -> Self:
        """A shallow copy with ``changes`` applied (no validation). The fields are copied with ``dict.copy``, which
        clones the table in one go, and given to the new record as its ``__dict__``."""
        copy = _new(self.__class__)
        fields = self.__dict__.copy()
        if changes:
            fields.update(changes)
        copy.__dict__ = fields
        return copy

    def json_data(self) -> dict[str, Any]:
        """The record as JSON-ready data: what the journal and ``--json`` outputs store. A field of the wrong
        type (records are not validated when built) raises here, rather than writing a journal that cannot
        be read back."""
        data: dict[str, Any] = journal_adapter(type(self)).dump_python(
            self, mode="json", by_alias=True, warnings="error"
        )
        return data

    def set(self, **changes: Any) -> None:
        """Change fields in place: only for a copy a transition owns (see ``transition.Transition``)."""
        self.__dict__.update(changes)


def journal_adapter(kind: type[Any]) -> TypeAdapter[Any]:
    """The validator and serializer of a record type, built once: the boundary where journals are read."""
    adapter = _adapters.get(kind)
    if adapter is None:
        adapter = _adapters[kind] = TypeAdapter(kind)
    return adapter


_adapters: dict[type[Any], TypeAdapter[Any]] = {}

_new = object.__new__
