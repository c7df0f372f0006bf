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
        copy = _new(self.__class__)
        _set(copy, "__dict__", {**self.__dict__, **changes})
        _set(copy, "__pydantic_fields_set__", self.__pydantic_fields_set__)
        _set(copy, "__pydantic_extra__", None)
        _set(copy, "__pydantic_private__", None)
        return copy

    def set(self, **changes: Any) -> None:
        """Change fields in place: only for a copy a transition owns (see ``flow.Transition``).

        The set of fields "explicitly set" is not maintained: nothing in Interlock dumps with
        ``exclude_unset``, and journals are written with every field."""
        self.__dict__.update(changes)


_new = object.__new__
_set = object.__setattr__
