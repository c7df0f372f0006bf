"""Verdict parsing (SPEC V5) and the NEEDS_UPSTREAM request block (V6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine.verdict import parse_verdict, request_block


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("VERDICT: PASS", "PASS"),
        ("verdict: fail", "fail"),
        ("  **VERDICT:** `FAIL`  ", "FAIL"),
        ("_Verdict_: *Needs_Input*", "Needs_Input"),
        ("> VERDICT: PASS.", "PASS"),
        ("VERDICT: FAIL\nVERDICT: PASS", "PASS"),
        ("VERDICT: PASS\nlater lines without one", "PASS"),
        ("The verdict: PASS", None),
        ("VERDICT:", None),
        ("", None),
    ],
)
def test_last_verdict_line_wins(answer: str, verdict: str | None) -> None:
    # SPEC V5
    assert parse_verdict(answer) == verdict


@given(st.text())
def test_parsing_never_raises(answer: str) -> None:
    result = parse_verdict(answer)
    assert result is None or (result.strip() == result and result)


def test_request_block_gives_target_title_and_body() -> None:
    # SPEC V6
    answer = (
        "text\n~~~request\nacme/lib\nAdd retries\nBecause the API flakes.\nTwice a day.\n~~~\nVERDICT: NEEDS_UPSTREAM"
    )
    assert request_block(answer) == ("acme/lib", "Add retries", "Because the API flakes.\nTwice a day.")
    assert request_block("```request\nonly-target\n```") is None
    assert request_block("no block") is None
