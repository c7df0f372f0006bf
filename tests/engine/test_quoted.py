"""A person's words quoted back in a reply cannot break out of their code span (issue 28, part 7)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.engine.quoted import quoted
from app.engine.raises import RaiseInvalid, parse_raise
from app.webhooks.commands import CommandError, parse_command


@given(st.text(alphabet=st.sampled_from("`@ab\n "), max_size=120))
def test_a_quote_is_one_code_span_whatever_the_words(text: str) -> None:
    shown = quoted(text)
    assert shown == "(nothing)" or (shown.startswith("`") and shown.endswith("`") and shown.count("`") == 2)
    assert "\n" not in shown and len(shown) <= 80 + 3


def test_an_unknown_command_with_a_backtick_pings_nobody() -> None:
    # a backtick in the words used to end the span: "@org/admins" after it would be a mention
    from datetime import UTC, datetime

    try:
        parse_command("/interlock `x` @org/admins", "k", datetime.now(UTC), "mallory")
    except CommandError as exc:
        reply = str(exc)
    assert reply.startswith("`/interlock 'x' @org/admins` is not a command Interlock knows")
    try:
        parse_raise(["`calls`=+1e300 @org/admins"])
    except RaiseInvalid as exc:
        assert str(exc).startswith("`'calls'=+1e300 @org/admins` is not a budget to raise")
