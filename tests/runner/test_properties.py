"""Bad input loses nothing: whatever a job (or an agent posing as one) stores or hands over, reading it never
raises; and a secret placed anywhere in a text never survives redaction."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.events import AdviceReturned, DecisionReturned, MissionFinished
from app.engine.record import MissionKind, Run
from app.redact import MASK, Redactor
from app.runner.handoff import OUTCOME_FILE, read_handoff
from app.runner.outcomes import read_record, record_event
from tests.runner.test_job import RUN

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
RECORD_KEYS = ["status", "answer", "commits", "usage", "exit_code", "duration_s", "agent", "model", "session_id"]
RECORDS = st.dictionaries(st.sampled_from(RECORD_KEYS), JSON | st.sampled_from(["done", "failed", "crashed"]))
AT = datetime(2026, 11, 30, tzinfo=UTC)


def waiting_run(kind: MissionKind) -> Run:
    from app.engine.events import Start
    from app.engine.graph.validate import parse_graph
    from app.engine.step import step
    from tests.helpers import edge, graph, node

    g = parse_graph(graph([node("build"), node("review", "review")], [edge("build", "PASS", "review")], entry="build"))
    run, _ = step(None, Start(key="s", at=AT, run_id=RUN, title="t"), g)
    assert run.waiting is not None
    return run.but(waiting=run.waiting.but(kind=kind))


RUNS = {kind: waiting_run(kind) for kind in (MissionKind.DELIVER, MissionKind.DECIDE, MissionKind.ADVISOR)}


@settings(max_examples=300, deadline=None)
@given(record=RECORDS, kind=st.sampled_from(list(RUNS)))
def test_any_stored_record_becomes_an_event(record: dict[str, Any], kind: MissionKind) -> None:
    event = record_event(RUNS[kind], record, "key", AT, 1)
    expected = {MissionKind.DECIDE: DecisionReturned, MissionKind.ADVISOR: AdviceReturned}.get(kind, MissionFinished)
    assert isinstance(event, expected) and event.key == "key" and event.seq == 1


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=200) | JSON.map(lambda value: json.dumps(value).encode()))
def test_any_stored_bytes_read_as_a_record_or_a_failure(raw: bytes) -> None:
    record = read_record(raw)
    assert isinstance(record, dict)
    record_event(RUNS[MissionKind.DELIVER], record, "key", AT, 1)


@settings(max_examples=200, deadline=None)
@given(data=JSON | st.fixed_dictionaries({"seq": st.just(1)}, optional={k: JSON for k in ["status", "base", "head"]}))
def test_any_hand_off_is_read_or_refused(data: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / OUTCOME_FILE).write_text(json.dumps(data))
        handed = read_handoff(Path(folder), 1)
    assert handed is None or handed.seq == 1


SECRETS = st.text(st.characters(blacklist_characters="[]", blacklist_categories=("Cs",)), min_size=8, max_size=40)


@settings(max_examples=300, deadline=None)
@given(before=st.text(max_size=40), after=st.text(max_size=40), secret=SECRETS)
def test_a_secret_never_survives_redaction(before: str, after: str, secret: str) -> None:
    # a secret without brackets cannot be re-formed by the mask and the text beside it
    redacted = Redactor({"SOME_API_KEY": secret}).text(before + secret + after)
    assert secret not in redacted and MASK in redacted
