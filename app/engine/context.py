"""The run's context: a preamble that is never compacted, then mission results compacted in tiers (SPEC C).

Why tiers: the next mission needs the latest results verbatim, a gist of the ones before, and only the
shape of the distant past; but the routing lines (verdicts, amendments, gate validations) are what make
the path understandable, so they are kept as long as the record keeps any history: its newest ``HISTORY_CHARS``,
after a marker (SPEC J5). Compaction is idempotent, so a resumed run can go through it again at every step
without drifting.
"""

from __future__ import annotations

import re
from dataclasses import field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from app.engine.base import Record
from app.engine.kinds import MissionKind

HISTORY_CHUNK = 64  # the oldest history lines are joined into one entry: the same text, a shorter list to copy
HISTORY_CHARS = 8000  # the compacted results a record keeps, newest first; older ones leave a marker (SPEC J5)
HISTORY_MARKER = "[… cut by Interlock: the compacted results up to mission #{seq}; each is in its mission record …]"
CUT_SEQ = re.compile(r"^(?:#(\d+) |\[… cut by Interlock: the compacted results up to mission #(\d+);)", re.MULTILINE)
MARKER_ROOM = 120  # more than any marker takes: a trimmed history stays within HISTORY_CHARS, marker included
CUT_MARKER = "\n[… cut by Interlock: {dropped} more bytes in mission record #{seq} …]"
SHORT_CUT_MARKER = "\n[… cut by Interlock: see mission record #{seq} …]"


class Tiers(BaseModel):
    """How much of each result survives: newest intact, then cut, then header only (SPEC C3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    intact: int = Field(2, ge=0)
    cut: int = Field(4, ge=0)
    cut_bytes: int = Field(2000, ge=64)


class Note(Record):
    """A person's words or the request: part of the preamble, never compacted (SPEC C1)."""

    label: str
    text: str
    data: bool = False  # text from outside (the request): shown fenced, as data, never as instructions


class ResultTier(StrEnum):
    """How much of a result the context still holds, as the journal stores it (past ``cut``: only a line in
    ``history``)."""

    INTACT = "intact"  # the whole answer
    CUT = "cut"  # at most ``Tiers.cut_bytes`` of it, with a marker naming the mission record


_INTACT, _CUT = ResultTier.INTACT, ResultTier.CUT  # read at every compaction: a global is read ~10x faster
# than an enum member on Python 3.11


class Result(Record):
    """One mission's result as the context holds it; the full text stays in the mission record (C5)."""

    seq: int
    stage: str
    visit: int
    kind: MissionKind
    body: str
    routing: list[str] = field(default_factory=list)
    tier: ResultTier = ResultTier.INTACT

    @property
    def header(self) -> str:
        return f"### {self.stage} — visit {self.visit}, mission #{self.seq} ({self.kind})"


class Context(Record):
    preamble: list[Note] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    tiers: Tiers = field(default_factory=Tiers)


def add_note(context: Context, label: str, text: str, data: bool = False) -> Context:
    note = Note(label=label, text=text, data=data)
    return context.but(preamble=[*context.preamble, note])


def append_result(context: Context, result: Result) -> Context:
    """Append a result and compact right after (SPEC C2, C3)."""
    return compact_context(context.but(results=[*context.results, result]))


def add_routing_line(context: Context, line: str) -> Context:
    """Attach a routing line to the newest result (or the preamble when there is none yet)."""
    if not context.results and context.history:
        return context.but(history=[*context.history[:-1], f"{context.history[-1]}\n> {line}"])
    if not context.results:
        return add_note(context, "routing", line)
    last = context.results[-1]
    updated = last.but(routing=[*last.routing, line])
    return context.but(results=[*context.results[:-1], updated])


def compact_context(context: Context) -> Context:
    """Tiered compaction from newest to oldest. Compacting a compacted context changes nothing (C4).

    Results past the cut tier keep their header and routing lines only; they move to ``history`` as plain
    lines, so what every later transition carries for them is a line, not a record. The oldest lines are
    joined into one entry now and then, so the list a transition copies stays short however long the run.
    """
    copy = context.but(results=list(context.results))
    return copy if compact_into(copy) else context


def compact_into(context: Context, trim: bool = True) -> bool:
    """Compaction in place, on a context whose ``results`` list the caller owns; True if anything changed.
    ``trim`` False: the rules before issue 16 (app/engine/rules.py), which kept every compacted result."""
    tiers = context.tiers
    results = context.results
    split = max(len(results) - tiers.intact - tiers.cut, 0)
    changed = False
    if split:
        history = context.history.copy()
        history.extend(map(_history_line, results[:split]))
        if len(history) > 2 * HISTORY_CHUNK:
            history[:HISTORY_CHUNK] = ["\n".join(history[:HISTORY_CHUNK])]
        context.history = trim_history(history) if trim else history
        del results[:split]
        changed = True
    for index in range(max(len(results) - tiers.intact, 0)):
        if results[index].tier is _INTACT:
            results[index] = _cut(results[index], tiers.cut_bytes)
            changed = True
    return changed


def trim_history(history: list[str]) -> list[str]:
    """The newest compacted results within ``HISTORY_CHARS``, after a marker naming the last mission cut (SPEC J5).

    Why: one line per mission would make the record, and so every save, grow for ever. The oldest entries go
    first, whole, and the marker takes the place of any earlier one: trimming a trimmed history changes
    nothing (C4). Each cut result is in full in its mission record (C5), its hop in the events files."""
    if sum(map(len, history)) <= HISTORY_CHARS:
        return history
    dropped = 0
    kept = sum(map(len, history))
    while dropped < len(history) - 1 and kept + MARKER_ROOM > HISTORY_CHARS:
        kept -= len(history[dropped])
        dropped += 1
    if not dropped:
        return history
    cut = CUT_SEQ.findall("\n".join(history[:dropped]))  # a result's header line, or an earlier marker
    last = max((int(seq or marked) for seq, marked in cut), default=0)
    return [HISTORY_MARKER.format(seq=last), *history[dropped:]]


def _history_line(result: Result) -> str:
    """A compacted result: who, when, and its routing lines — one short line each (the full text is in the
    mission record)."""
    head = f"#{result.seq} {result.stage} v{result.visit} ({result.kind})"
    return (
        "\n".join([head, *(f"> {line}" for line in result.routing)])
        if len(result.routing) > 1
        else f"{head}{': ' + result.routing[0] if result.routing else ''}"
    )


def _cut(result: Result, budget: int) -> Result:
    if result.tier is not _INTACT:
        return result
    raw = result.body.encode("utf-8")
    if len(raw) <= budget:
        return result.but(tier=_CUT)
    template = CUT_MARKER  # the short one when the long one alone would not fit a small budget
    if len(template.format(dropped=len(raw), seq=result.seq).encode("utf-8")) > budget:
        template = SHORT_CUT_MARKER
    marker_room = budget - len(template.format(dropped=len(raw), seq=result.seq).encode("utf-8"))
    kept = cut_utf8(raw, max(marker_room, 0))
    marker = template.format(dropped=len(raw) - len(kept.encode("utf-8")), seq=result.seq)
    return result.but(body=kept + marker, tier=_CUT)


def cut_utf8(raw: bytes, limit: int) -> str:
    """The longest prefix of ``raw`` within ``limit`` bytes that ends on a whole UTF-8 character."""
    return raw[:limit].decode("utf-8", errors="ignore")


def fence(text: str) -> str:
    """``text`` in a fenced block longer than any backtick run inside it, so it cannot close the fence."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text}\n{ticks}"


def render_context(context: Context) -> str:
    """The context as the next mission reads it: preamble, then results with their routing lines.

    Every text from outside the engine — the request, an agent's answer — is fenced by :func:`fence`, so
    that only the engine's own headers and routing lines stand outside a fence (SPEC C2, GH9)."""
    parts = ["## Request and people's words"]
    parts += [f"**{note.label}**\n{fence(note.text) if note.data else note.text}" for note in context.preamble]
    if context.history or context.results:
        parts.append("## Results so far")
    if context.history:
        intro = "Earlier results, compacted to their routing lines (each full text is in its mission record):"
        parts.append("\n".join([intro, *context.history]))
    for result in context.results:
        block = [result.header]
        if result.body:  # fenced as data like the request: a header forged in an answer stays inside (GH9)
            block.append(fence(result.body))
        block += [f"> {line}" for line in result.routing]
        parts.append("\n".join(block))
    return "\n\n".join(parts)
