"""Mission outcomes: a finished mission becomes its record, and a record becomes the engine's event.

Every shell goes through here, so that a mission means the same to the engine wherever it ran: the local
shell builds the record from its agent's outcome and then the event from that record; the GitHub shell
reads the record a job stored (``app/runner/job.py`` wrote it with ``mission_record``) and builds the
event from it. A record is read leniently: it is a file anyone with push access could write, so a bad
field is a failed mission or an unreported figure, never an error that fails a delivery forever.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from app.agents.base import chargeable
from app.engine.base import journal_adapter
from app.engine.events import AdviceReturned, DecisionReturned, Event, GitState, MissionFinished
from app.engine.record import MissionKind, MissionStatus, Run, Usage
from app.runner.gitstate import read_state
from app.runner.orders import parse_advice
from app.runner.records import mission_record

__all__ = ["mission_event", "mission_record", "outcome_event", "read_record", "record_event"]

USAGE_FIELDS = tuple(item.name for item in dataclasses.fields(Usage))
UNKNOWN_ALLOWED = ("cost_usd",)  # a figure whose ``null`` means unknown, which is never the same as 0
WORDS = ("source", "prices_as_of")  # where the cost came from (SPEC W3): text, a source outside CostSource dropped


def read_record(raw: bytes | None) -> dict[str, Any] | None:
    """A stored mission record; one that is not a JSON object counts as a failed mission, never as a delivery
    that fails forever."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        return {"status": MissionStatus.FAILED.value, "answer": "The job stored a mission record that is unreadable."}
    return data


def record_event(run: Run, record: dict[str, Any], key: str, moment: datetime, seq: int) -> Event:
    """The event a stored record means: a decision or advice when the run awaits one, else a mission."""
    waiting = run.waiting
    kind = waiting.kind if waiting is not None and waiting.seq == seq else None
    return outcome_event(kind, record, key, moment, seq)


def outcome_event(
    kind: MissionKind | None, record: dict[str, Any], key: str, moment: datetime, seq: int, git: GitState | None = None
) -> Event:
    """The event of the record of call ``seq`` of ``kind``: a decision's answer, an advisor's advice, or a
    mission's end (with ``git``, the delivery's state the shell read after it). A decision carries the state
    too: its label may end the run, and the end checks the delivery against its base (SPEC V9)."""
    finished = mission_event(record, key, moment, seq, git)
    answer = finished.answer if finished.status is MissionStatus.DONE else ""
    if kind is MissionKind.DECIDE:
        return DecisionReturned(key=key, at=moment, seq=seq, answer=answer, usage=finished.usage, git=finished.git)
    if kind is MissionKind.ADVISOR:
        advice, instruction = parse_advice(answer)
        return AdviceReturned(
            key=key,
            at=moment,
            seq=seq,
            advice=advice,
            instruction=instruction,
            usage=finished.usage,
            status=finished.status,
        )
    return finished


def mission_event(
    record: dict[str, Any], key: str, moment: datetime, seq: int, git: GitState | None = None
) -> MissionFinished:
    """The engine event for a mission record (read leniently: a bad field is a failed mission)."""
    try:
        status = MissionStatus(record.get("status", "failed"))
    except ValueError:
        status = MissionStatus.FAILED
    return MissionFinished(
        key=key,
        at=moment,
        seq=seq,
        status=status,
        answer="" if record.get("answer") is None else str(record.get("answer")),
        usage=_usage(record.get("usage")),
        commits=(_number(record.get("commits"), int) or 0) + satellite_commits(record),
        session_id=_text(record.get("session_id")),
        exit_code=_number(record.get("exit_code"), int),
        duration_s=_number(record.get("duration_s"), float),
        agent=_text(record.get("agent")),
        model=_text(record.get("model")),
        git=git or read_state(record.get("git")),
    )


def satellite_commits(record: dict[str, Any]) -> int:
    """The commits pushed to the run's satellite repositories (SPEC P4, U7): progress as much as the run
    branch's own. Read leniently like the rest: an entry that is not a count adds nothing."""
    satellites = record.get("satellites")
    entries = satellites.values() if isinstance(satellites, dict) else ()
    counts = (_number(entry.get("commits"), int) for entry in entries if isinstance(entry, dict))
    return sum(count for count in counts if count is not None and count > 0)


def _usage(data: Any) -> Usage:
    """Usage from a record, field by field: a figure of the wrong kind (a fraction of a token) counts as
    unreported, and the others — the cost above all, which budgets charge — are kept."""
    given = data if isinstance(data, dict) else {}
    fields = {
        name: given[name]
        for name in USAGE_FIELDS
        if (isinstance(given.get(name), bool) if name == "estimated" else chargeable(given.get(name)))
        or (name in UNKNOWN_ALLOWED and given.get(name, 0) is None)
        or (name in WORDS and isinstance(given.get(name), str))
    }
    adapter, kept = journal_adapter(Usage), {}
    for name, value in fields.items():
        try:
            adapter.validate_python({name: value})
        except ValidationError:
            continue
        kept[name] = value
    usage: Usage = adapter.validate_python(kept)
    return usage


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    """``value`` if it is a number of the right kind (a bool is not), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not isinstance(value, int)):
        return None
    if not math.isfinite(value):
        return None
    return kind(value)
