"""The base of the engine's journal models: pydantic at the boundary, cheap copies inside.

A transition copies records field by field many times; pydantic's ``model_copy`` costs microseconds each
time. ``but`` makes the same shallow copy without validation — safe because the engine only ever writes
values of the right type that it built itself, and every record read from a journal is validated there.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Unknown keys refused, so a journal written by a newer version is noticed rather than misread."""

    model_config = ConfigDict(extra="forbid")

    def but(self, **changes: Any) -> Self:
        """A shallow copy with ``changes`` applied (no validation)."""
        copy = self.__class__.__new__(self.__class__)
        object.__setattr__(copy, "__dict__", {**self.__dict__, **changes})
        object.__setattr__(copy, "__pydantic_fields_set__", self.__pydantic_fields_set__ | changes.keys())
        object.__setattr__(copy, "__pydantic_extra__", None)
        object.__setattr__(copy, "__pydantic_private__", None)
        return copy

    def set(self, **changes: Any) -> None:
        """Change fields in place: only for a copy a transition owns (see ``flow.Transition``)."""
        self.__dict__.update(changes)
        self.__pydantic_fields_set__.update(changes)
