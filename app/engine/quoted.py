"""A person's words quoted back in a reply, safely (issue 28, part 7).

Why: a refusal quotes what it did not understand in an inline code span (`` `…` ``), where GitHub pings no
@mention and renders no markdown. A backtick in the quoted words would end the span early, and what follows it —
``@org/team``, a link, an image — would render and ping. So the words are cut, put on one line, and their
backticks replaced; an empty span, which GitHub shows as two backticks, is said in words instead.
"""

from __future__ import annotations


def quoted(text: str, limit: int = 80) -> str:
    """``text`` as an inline code span its own characters cannot break out of, at most ``limit`` characters of it."""
    shown = " ".join(text.split())
    cut = len(shown) > limit
    shown = shown[:limit].replace("`", "'") + ("…" if cut else "")
    return f"`{shown}`" if shown else "(nothing)"
