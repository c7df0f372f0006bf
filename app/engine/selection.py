"""What counts as a decision model choosing a label (SPEC V8), and the reason a run stops when it chose none.

A ``decide`` node hands its verdict to a cheap model that must answer one label of a closed list. Cheap models
answer prose, echo their prompt, or hedge between two labels; none of that is a choice, and guessing one out of
it would route the run on words nobody chose. So the rule is strict and the same on every shell:

- with one or more own ``VERDICT: <label>`` lines (read as SPEC V5 reads a worker's: not inside a fence, a
  quote or a comment; emphasis, backticks and a trailing period ignored), they must all name the same label of
  the list, any case; lines of prose around them are the model's explanation;
- with none, the whole answer must be one label of the list alone, any case, the same marks ignored around it.

Anything else — a label inside a sentence, two labels, a label not in the list, an empty answer — chooses
nothing: the mission summary records no verdict and the run stops with ``invalid_selection``, its reason
quoting the start of the answer on one line. The summary's verdict is therefore always a label or nothing, so
every view of it (journey, status comment, check run, traces) shows a label or nothing; the whole answer stays in
the mission record (SPEC C5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.verdict import verdict_labels

ANSWER_SHOWN = 100  # characters of an answer that chose nothing quoted in the stop's reason
_MARKS = " \t\r\n*_`~"  # the emphasis and code marks a verdict line's label is read without (SPEC V5)
_BLANKS = re.compile(r"\s+")


@dataclass(frozen=True)
class Selection:
    """The label chosen, as the graph spells it; or ``None`` and ``problem``, why the answer chose none."""

    label: str | None
    problem: str = ""


def select_label(answer: str, labels: Sequence[str]) -> Selection:
    """The label ``answer`` chooses among ``labels`` by the rule above, or why it chooses none."""
    named = verdict_labels(answer)
    if named:
        distinct: dict[str, str] = {}
        for label in named:
            distinct.setdefault(label.casefold(), label)
        if len(distinct) > 1:
            return Selection(None, f"its verdict lines name {len(distinct)} labels ({', '.join(distinct.values())})")
        said = named[-1]
        found = _label_of(said, labels)
        return Selection(found) if found else Selection(None, f"its verdict line names {said[:40]!r}, not a label")
    bare = answer.strip(_MARKS).rstrip(".").strip(_MARKS)
    if not bare:
        return Selection(None, "the answer is empty")
    found = _label_of(bare, labels) if "\n" not in bare else None
    return Selection(found) if found else Selection(None, "it is neither a line `VERDICT: <label>` nor a label alone")


def _label_of(said: str, labels: Sequence[str]) -> str | None:
    wanted = said.casefold()
    return next((label for label in labels if label.casefold() == wanted), None)


def invalid_selection_reason(stage: str, seq: int, labels: Sequence[str], selection: Selection, answer: str) -> str:
    """The stop's reason: where, the closed list, why no label, and the start of the answer on one line (it was
    masked where it entered, like every agent's text); the whole of it is in the mission record (SPEC C5)."""
    reason = f"the decision at {stage!r} chose no label of {', '.join(labels)}: {selection.problem}"
    shown = shown_answer(answer)
    return f'{reason}; it answered "{shown}" (whole in mission #{seq}\'s record)' if shown else reason


def shown_answer(answer: str) -> str:
    """The start of ``answer`` on one line: control characters and runs of blanks become one space, and the cut,
    marked with an ellipsis, falls between words. A word is shown whole or not at all, so that the redactor, which
    masks the reason where it is shown, finds a key whole (a key cut in half matches no pattern and no value)."""
    flat = _BLANKS.sub(" ", "".join(c if c.isprintable() else " " for c in answer)).strip()
    if len(flat) <= ANSWER_SHOWN:
        return flat
    words, _, _ = flat[: ANSWER_SHOWN + 1].rpartition(" ")  # one more: a blank right after the limit ends a word
    return words + "…"
