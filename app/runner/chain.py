"""Tamper evidence of the journal (SPEC J6): what the run driver adds to each saved record and transition.

Why here and not in the engine: a hash is of the bytes the journal stores, which only a writer knows; the engine
stays free of encodings. Each record carries the SHA-256 of its previous version (encoded as the journal stores
it) and of each mission record it references; each transition also writes, once, the event that made it and the
hash of the record it gave (``events/<version>.json``), so ``interlock verify`` can replay the run through the
engine from the journal alone and tell an edited file from an engine that now routes the same history otherwise.
The record is the one that grows with a transition: one event file each, so the journal stays linear (SPEC J5).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from app.engine import events
from app.engine.anchor import Anchor
from app.engine.base import journal_adapter
from app.engine.record import Chain, Run
from app.store.journal import encode_json, encode_record, event_path, mission_path

RULES = "rules"  # the engine rules the transition was made under (app/engine/rules.py); absent: none recorded
ROUTING = "routing"  # the routing lines the transition added (SPEC C3); absent: none, or written before rules 4
OWED = "owed"  # the comments the transition posts, by mark and text: a redelivery posts those missing
ANCHOR = "anchor"  # the first sealed transition of a run older than J6 keeps the record it replays from
FILE: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])  # pydantic builds an adapter in ms: once each
MISSIONS: TypeAdapter[dict[str, str]] = TypeAdapter(dict[str, str])
VERSION: TypeAdapter[int] = TypeAdapter(int)
LINES: TypeAdapter[list[str]] = TypeAdapter(list[str])


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_hash(run: Run) -> str:
    """The hash of a record as every store writes it (``encode_record``)."""
    return sha256(encode_record(run))


def head_anchor(run: Run, state: str) -> Anchor:
    """What the shells write where the state branch cannot rewrite it after ``run`` was saved or read at the state
    commit ``state`` (``app/engine/anchor.py``): its version and the hash of its record as stored."""
    return Anchor(run.id, run.version, record_hash(run), state)


def event_kinds() -> dict[str, type[events.Event]]:
    """Every event class by name, subclasses of subclasses too: the names an events file may carry."""
    found: dict[str, type[events.Event]] = {}
    todo = list(events.Event.__subclasses__())
    while todo:
        kind = todo.pop()
        found[kind.__name__] = kind
        todo.extend(kind.__subclasses__())
    return found


def new_mission_hashes(
    run: Run, previous: Run | None, files: Mapping[str, bytes], read: Callable[[str], bytes | None]
) -> dict[str, str]:
    """The hashes of the mission records this transition finished: a mission whose summary ended here. Its record
    is among the saved files (local shell) or was read with the record (GitHub's job stored it): no extra call."""
    found: dict[str, str] = {}
    for summary in run.missions:
        before = previous.mission(summary.seq) if previous is not None else None
        if summary.status is None or (before is not None and before.status is not None):
            continue
        path = mission_path(run.id, summary.seq, summary.stage)
        data = files.get(path)
        data = data if data is not None else read(path)
        if data is not None:
            found[path] = sha256(data)
    return found


def seal(run: Run, previous: Run | None, new_missions: Mapping[str, str]) -> Run:
    """``run`` carrying its chain: the previous version's hash and the mission records of its window, those it
    inherits and those this transition finished (bounded by the window, SPEC J5)."""
    inherited = dict(previous.chain.missions) if previous is not None and previous.chain is not None else {}
    inherited.update(new_missions)
    window = {mission_path(run.id, m.seq, m.stage) for m in run.missions}
    kept = {path: digest for path, digest in sorted(inherited.items()) if path in window}
    chain = Chain(previous=record_hash(previous) if previous is not None else "", missions=kept)
    return run.but(chain=chain)


def event_file(
    run: Run,
    event: events.Event,
    previous: Run | None,
    new_missions: Mapping[str, str],
    owed: list[dict[str, str]] | None = None,
) -> dict[str, bytes]:
    """The transition's own file: the event, the hash of the record it made, the mission records it vouches for
    and, for a run older than J6, the unsealed record it started from (once: the first sealed transition); and
    the comments the transition owes, as the shell says them (``owed``, ``app/webhooks/outbox.py``)."""
    data: dict[str, Any] = {
        "version": run.version,
        "kind": type(event).__name__,
        "event": journal_adapter(type(event)).dump_python(event, mode="json", by_alias=True, warnings=False),
        "record": record_hash(run),
        "graph": run.graph_hash,  # the graph the event was applied on: the new one for an upgrade (SPEC J7)
        "missions": dict(sorted(new_missions.items())),
    }
    if run.rules:  # the engine rules that made it, which the record says too (left out when it says none)
        data[RULES] = run.rules
    if run.routed:  # kept here for good: the record keeps only its newest history (SPEC C3, J5)
        data[ROUTING] = run.routed
    if owed:
        data[OWED] = owed
    if previous is not None and previous.chain is None:
        data[ANCHOR] = previous.journal()
    return {event_path(run.id, run.version): encode_json(data)}


@dataclass(frozen=True)
class Transition:
    """One events file read back."""

    version: int
    event: events.Event
    record: str
    graph: str
    missions: dict[str, str]
    anchor: Run | None
    rules: int = 0  # as recorded; 0 when the events file records none (written before issue 27)
    routing: tuple[str, ...] = ()  # the routing lines it added, as recorded (SPEC C3)


class TransitionUnreadable(ValueError):
    """An events file that is not what the driver writes."""


def read_transition(data: bytes) -> Transition:
    try:
        raw = FILE.validate_json(data)
        kind = event_kinds()[str(raw["kind"])]
        event = journal_adapter(kind).validate_python(raw["event"])
        anchor = Run.from_journal(raw[ANCHOR]) if raw.get(ANCHOR) is not None else None
        missions = MISSIONS.validate_python(raw.get("missions", {}))
        version = VERSION.validate_python(raw["version"], strict=True)  # as written: no 1.0, no true
        rules = VERSION.validate_python(raw.get(RULES, 0), strict=True)
        routing = tuple(LINES.validate_python(raw.get(ROUTING, []), strict=True))
        return Transition(version, event, str(raw["record"]), str(raw["graph"]), missions, anchor, rules, routing)
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        raise TransitionUnreadable(str(exc).splitlines()[0]) from None
