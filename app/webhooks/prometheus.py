"""Prometheus text exposition, the few pieces /metrics needs: an escaped label value, and a series line.
https://prometheus.io/docs/instrumenting/exposition_formats/
"""

from __future__ import annotations

from collections.abc import Iterable


def label(value: str) -> str:
    """A label value escaped as the text format wants it (backslash, double quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series(name: str, labels: dict[str, str], value: float) -> str:
    """One sample line: ``name{a="x",b="y"} value``; whole numbers without a decimal point."""
    inside = ",".join(f'{key}="{label(text)}"' for key, text in labels.items())
    shown = str(int(value)) if float(value).is_integer() else repr(float(value))
    return f"{name}{{{inside}}} {shown}"


def family(name: str, kind: str, help_text: str, lines: Iterable[str]) -> list[str]:
    """A metric's ``# HELP`` and ``# TYPE`` lines, then its samples; nothing while it has no sample yet."""
    samples = list(lines)
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples] if samples else []
