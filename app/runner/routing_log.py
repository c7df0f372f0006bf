"""Every routing line of a run, read from its events files (``interlock journey RUN --routing``, SPEC C3).

Why the events files: the record keeps the newest ``HISTORY_CHARS`` of its history so that a save stays bounded
however long the run (SPEC J5), so the record alone cannot keep every verdict, gate validation and budget raise
of a 3,000-mission run. From engine rules 4 each transition names the lines it added and its events file keeps
them, once, where nothing trims: the path of the run stays readable to its end, locally, on GitHub and archived.
A transition made under older rules recorded no lines; such versions are counted, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.engine.record import Run
from app.engine.rules import SINCE, Change
from app.runner import chain
from app.store.journal import FileReader, event_path

FIRST_RULES = SINCE[Change.ROUTING_JOURNALLED]  # the first engine rules whose transitions name their lines


@dataclass
class RoutingLog:
    """The lines in the order they were added, and the versions that could not say theirs."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    unjournalled: list[int] = field(default_factory=list)  # made under rules before 4: their lines are unknown
    unreadable: list[int] = field(default_factory=list)  # events file gone or not one (``interlock verify`` says)


def routing_log(reader: FileReader, run: Run) -> RoutingLog:
    """Each version's routing lines, from version 1 to the record's."""
    log = RoutingLog()
    for version in range(1, run.version + 1):
        data = reader.read(event_path(run.id, version))
        try:
            moved = chain.read_transition(data) if data is not None else None
        except chain.TransitionUnreadable:
            moved = None
        if moved is None:
            log.unreadable.append(version)
            continue
        if moved.rules < FIRST_RULES:
            log.unjournalled.append(version)
            continue
        at = moved.event.at.isoformat()
        event = type(moved.event).__name__
        log.rows += [{"version": version, "at": at, "event": event, "line": line} for line in moved.routing]
    return log


def render_routing(log: RoutingLog) -> str:
    """The lines as a person reads them: one a line, after the version and event that added it."""
    lines = [f"v{row['version']} {row['event']}: {row['line']}" for row in log.rows]
    if log.unjournalled:
        lines.append(
            f"{len(log.unjournalled)} transition(s) (versions {_spans(log.unjournalled)}) were made before Interlock "
            "kept routing lines in the journal: the record's history holds their newest ones"
        )
    if log.unreadable:
        lines.append(
            f"versions {_spans(log.unreadable)}: the events file is gone or unreadable (`interlock verify` says which)"
        )
    return "\n".join(lines) if lines else "no routing lines yet"


def routing_json(log: RoutingLog) -> dict[str, Any]:
    return {"routing": log.rows, "unjournalled": log.unjournalled, "unreadable": log.unreadable}


def _spans(versions: list[int]) -> str:
    """``1-3, 7``: consecutive versions joined."""
    spans: list[list[int]] = []
    for version in versions:
        if spans and spans[-1][1] == version - 1:
            spans[-1][1] = version
        else:
            spans.append([version, version])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
