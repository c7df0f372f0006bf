"""The messages a run owes across transitions, kept in its events files (issue 28, part 3: nothing lost).

Why: a transition is saved first and its effects carried out after; when one fails (GitHub answers 502 to a
comment) the delivery fails and its redelivery carries out what the saved record still owes
(``app/engine/owed.py``). But the record owes what its *state* requires, so a message of a transition that
another transition followed before the redelivery came (a ``Decided: …`` comment, a gate's, an escalation's
decision) was owed by no record any more: lost. The job, the pull requests and the labels are not lost that way,
since the newer state requires them again or no longer needs them; a comment only says what happened then.

So each transition's events file keeps, once, the comments it posts: their hidden mark and text (``owed``). A
redelivery reads the events files from its own transition to the newest, at most ``LOOKBACK`` of them, in one
GraphQL call, and posts each comment whose mark the issue does not show, oldest first. Kept in the events file
rather than the record: nothing has to be written to take one off the list — the mark on the issue says it was
posted — so the path that works pays nothing, and the record stays the size it was (SPEC J5).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

from app.engine.effects import Effect, Escalate, PostMessage
from app.engine.record import Run
from app.github.client import Installation
from app.github.seen import effect_mark
from app.runner.chain import OWED
from app.store.journal import event_path
from app.store.layout import sharded

log = logging.getLogger("interlock.outbox")
LOOKBACK = 8  # transitions a redelivery looks back over: a run rarely makes more before one comes


def owed_key(private_key: str) -> bytes | None:
    """The key the App signs its owed comments with, derived from its private key: anyone may push to the state
    branch, so a redelivery posts only what the App itself wrote there (None without a key: nothing is kept)."""
    return hashlib.sha256(b"interlock owed comments\0" + private_key.encode()).digest() if private_key else None


def signed(key: bytes, mark: str, text: str) -> str:
    return hmac.new(key, f"{mark}\0{text}".encode(), hashlib.sha256).hexdigest()


def owed_entries(run: Run, effects: list[Effect], key: bytes | None) -> list[dict[str, str]]:
    """The comments a transition's effects post, signed, as its events file keeps them (``RunDriver``'s ``owed``)."""
    entries: list[dict[str, str]] = []
    if key is None:
        return entries
    for effect in effects:
        mark = effect_mark(run, effect)
        text = effect.text if isinstance(effect, PostMessage) else ""
        text = effect.decision if isinstance(effect, Escalate) else text
        if mark and text:
            entries.append({"mark": mark, "text": text, "sig": signed(key, mark, text)})
    return entries


def earlier_messages(
    api: Installation, repo: str, branch: str, run: Run, key: str, signer: bytes | None
) -> list[tuple[str, str]]:
    """(mark, text) of the comments the transitions from the one that applied ``key`` to the newest posted,
    oldest first (the newest ``LOOKBACK`` when that one is older: those before are dropped, and logged), read
    from the state ``branch`` of ``repo``; only entries the App signed (``signer``) count."""
    if signer is None:
        return []
    versions = list(range(run.version, max(run.version - LOOKBACK, 0), -1))
    logical = [event_path(run.id, version) for version in versions]
    paths = [*logical, *(where for path in logical if (where := sharded(path)) is not None)]
    snapshot = api.snapshot(repo, branch, paths)
    files = snapshot.files if snapshot is not None else {}
    found: list[tuple[str, str]] = []
    for path in logical:
        data = _events_file(files.get(path) or files.get(sharded(path) or ""))
        found = [*_entries(data, signer), *found]
        event = data.get("event")
        if isinstance(event, dict) and event.get("key") == key:
            break
    else:
        if run.version > LOOKBACK:
            said = "run %s: event %s is older than the %d newest transitions: only their comments are posted"
            log.warning(said, run.id, key, LOOKBACK)
    unique = {mark: text for mark, text in reversed(found)}  # one each; the oldest place kept below
    return [(mark, text) for mark, text in found if unique.pop(mark, None) is not None]


def _events_file(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _entries(data: dict[str, Any], signer: bytes) -> list[tuple[str, str]]:
    """The events file's owed comments, read leniently: an entry that is not a mark, a text and the App's
    signature of both is skipped (a forged one among them: the state branch is anyone's with push access)."""
    owed = data.get(OWED)
    entries = owed if isinstance(owed, list) else []
    return [
        (entry["mark"], entry["text"])
        for entry in entries
        if isinstance(entry, dict)
        and isinstance(entry.get("mark"), str)
        and isinstance(entry.get("text"), str)
        and isinstance(entry.get("sig"), str)
        and hmac.compare_digest(entry["sig"], signed(signer, entry["mark"], entry["text"]))
    ]
