"""Text a graph may not hold: what no shell, file system, git ref or UTF-8 file can carry.

A stage name becomes a branch's commit message, a file name in the journal, an argument of the agent's
command and a line on a terminal. A NUL cannot be passed to a process at all, a lone surrogate cannot be
written as UTF-8, and a control character (an escape sequence, a carriage return) in a name rewrites what a
person sees. Such a graph validated, then ``run`` failed half-way, leaving a run ``running``. So the
validator refuses it up front, with the ``schema`` code: the text is outside what the format allows.

Names (the graph's name, its entry, stages, capabilities and edge ends and labels) may hold no control
character at all; any other string (a description, a prompt, a check command) no NUL and no lone surrogate,
since those may span lines.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from typing import Any

NAME_KEYS = frozenset({"name", "entry", "stage", "capability", "from", "to", "verdict"})


def unfit_text(data: Any) -> Iterator[tuple[str, str | None]]:
    """A message for every string in the graph ``data`` that cannot be carried, with the stage it is in.

    Walks iteratively: parsed JSON can be nested deeper than the recursion limit."""
    pending: deque[tuple[Any, str, str | None]] = deque([(data, "graph", None)])
    while pending:
        value, where, stage = pending.popleft()
        if isinstance(value, dict):
            stage = value["stage"] if isinstance(value.get("stage"), str) else stage
            for key, item in value.items():
                yield from _check(key, f"a key in {where}", stage, is_name=True)
                pending.append((item, f"{where}.{key}", stage))
                if isinstance(item, str):
                    yield from _check(item, f"{where}.{key}", stage, is_name=key in NAME_KEYS)
        elif isinstance(value, list):
            pending.extend((item, f"{where}[{index}]", stage) for index, item in enumerate(value))
            for index, item in enumerate(value):
                if isinstance(item, str):
                    yield from _check(item, f"{where}[{index}]", stage, is_name=False)


_UNFIT_NAME = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_UNFIT_TEXT = re.compile("[\x00\ud800-\udfff]")


def _check(text: Any, where: str, stage: str | None, *, is_name: bool) -> Iterator[tuple[str, str | None]]:
    if not isinstance(text, str):
        return
    found = (_UNFIT_NAME if is_name else _UNFIT_TEXT).search(text)
    if found is not None:
        code = ord(found.group())
        kind = "a lone surrogate" if 0xD800 <= code <= 0xDFFF else "a control character"
        rule = "names must be printable" if is_name else "text must be valid UTF-8 without NUL"
        yield f"{where} {text!r} holds {kind} (U+{code:04X}): {rule}", _shown(stage)


def _shown(stage: str | None) -> str | None:
    """The stage as a report names it: unfit text escaped, so that printing the report cannot fail."""
    return stage if stage is None or stage.isprintable() else repr(stage)[1:-1]
