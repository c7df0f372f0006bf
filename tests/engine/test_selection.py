"""A decision records a label of its closed list or none (SPEC V8); the whole answer is the record's (SPEC C5).

Issue 17: a small model's decision answered prose (it echoed its prompt), and the decide mission's summary took
the start of that prose as its verdict, so the journey's verdict column showed "## decision [INST]## Decision
Read the result above…". These tests drive ``step()`` with the worker's ``MissionFinished`` at a ``decide`` node
and then the ``DecisionReturned`` that carries the decision model's answer.
"""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.effects import AskDecision
from app.engine.record import MissionKind, MissionStatus, ReasonCode, Status
from app.engine.selection import ANSWER_SHOWN, select_label, shown_answer
from tests.engine.driver import Driver
from tests.helpers import doc, edge, graph, node

LABELS = ("BUG", "FEATURE", "QUESTION")
ECHO = "## decision [INST]\n## Decision\nRead the result above and choose exactly one label"


def _triage() -> Driver:
    return Driver(
        graph(
            [node("triage", decide=True), node("fix"), node("brief"), node("answer")],
            [
                edge("triage", "BUG", "fix"),
                edge("triage", "FEATURE", "brief"),
                edge("triage", "QUESTION", "answer"),
                *(edge(stage, "PASS", "__end__") for stage in ("fix", "brief", "answer")),
            ],
            entry="triage",
        )
    )


def _decided(answer: str) -> Driver:
    """The worker's mission at the decide node ends (``MissionFinished``), then its decision returns ``answer``."""
    d = _triage()
    d.finish("The parser crashes on empty input.")  # the worker's result: MissionFinished
    ask = d.of(AskDecision)[0]
    d.apply(ev.DecisionReturned, seq=ask.seq, answer=answer)
    return d


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("VERDICT: BUG", "BUG"),
        ("bug", "BUG"),  # any case; the label as the graph spells it is recorded
        ("Bug.", "BUG"),  # a trailing period
        ("**feature**\n", "FEATURE"),  # emphasis and blanks around a label alone
        ("`QUESTION`", "QUESTION"),
        ("It crashes on empty input, so a defect.\nVERDICT: bug", "BUG"),  # prose around one verdict line
        ("VERDICT: BUG\nVERDICT: Bug.", "BUG"),  # the same label twice
        ("**Verdict:** `Feature`", "FEATURE"),
    ],
)
def test_a_label_is_chosen_by_a_verdict_line_or_by_the_label_alone(answer: str, label: str) -> None:
    # SPEC V8: the mission summary records exactly the label chosen
    assert select_label(answer, LABELS).label == label
    d = _decided(answer)
    decision = d.run.mission(2)
    assert decision is not None and decision.kind is MissionKind.DECIDE and decision.verdict == label
    assert d.run.status is Status.RUNNING and d.run.path[-1].verdict == label


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (ECHO, "neither a line `VERDICT: <label>` nor a label alone"),  # the prompt echoed
        ("I think this is a BUG.", "neither a line"),  # a label inside a sentence
        ("BUG or FEATURE", "neither a line"),  # two labels in prose
        ("BUG\nFEATURE", "neither a line"),  # two labels, one a line
        ("VERDICT: BUG\nVERDICT: FEATURE", "its verdict lines name 2 labels (BUG, FEATURE)"),
        ("VERDICT: BUG!", "its verdict line names 'BUG!', not a label"),  # other punctuation is no label
        ("VERDICT: DOCS", "its verdict line names 'DOCS', not a label"),  # outside the list
        ("```\nVERDICT: BUG\n```", "neither a line"),  # a quoted verdict line is not the answer's (SPEC V5)
        ("", "the answer is empty"),
        ("  \n ", "the answer is empty"),
    ],
)
def test_an_answer_that_is_no_label_records_no_verdict_and_stops_the_run(answer: str, problem: str) -> None:
    # SPEC V8: an answer outside the list stops the run with invalid_selection — no verdict, no second chance
    assert select_label(answer, LABELS).label is None
    d = _decided(answer)
    decision = d.run.mission(2)
    assert decision is not None and decision.kind is MissionKind.DECIDE
    assert decision.verdict is None and decision.status is MissionStatus.DONE
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert d.run.reason.code is ReasonCode.INVALID_SELECTION and d.run.waiting is None
    assert d.run.ledger.calls == 2 and d.run.mission_count == 2  # no re-ask was dispatched
    message = d.run.reason.message
    assert message.startswith("the decision at 'triage' chose no label of BUG, FEATURE, QUESTION: ")
    assert problem in message and "\n" not in message


def test_the_stop_reason_quotes_the_start_of_the_answer_on_one_line() -> None:
    # SPEC V8, E2: the reason says what was answered, cut short; the whole answer is the mission record's (C5)
    answer = ECHO + "\x1b[2J\x00\n\n" + "blah " * 200
    d = _decided(answer)
    message = d.run.reason.message  # type: ignore[union-attr]
    quoted = message.split('it answered "', 1)[1].split('" (whole in mission #2', 1)[0]
    assert quoted.startswith("## decision [INST] ## Decision Read the result above") and quoted.endswith("…")
    assert len(quoted) <= ANSWER_SHOWN + 1 and "blah " * 20 not in quoted  # cut, the ellipsis after the cut
    assert "\x1b" not in message and "\x00" not in message  # no control character reaches a terminal
    assert message.endswith("(whole in mission #2's record)")


def test_an_empty_answer_quotes_nothing() -> None:
    # SPEC V8
    message = _decided("").run.reason.message  # type: ignore[union-attr]
    assert message == "the decision at 'triage' chose no label of BUG, FEATURE, QUESTION: the answer is empty"


def test_the_worker_mission_at_a_decide_node_records_no_verdict_of_its_own() -> None:
    # SPEC V8: the worker's prose, even with a verdict line, is the decision's input, never a verdict
    d = _triage()
    d.finish("Looks like a crash.\nVERDICT: FEATURE")
    worker = d.run.mission(1)
    assert worker is not None and worker.verdict is None and d.of(AskDecision)


def test_the_quoted_answer_is_cut_between_words_so_a_key_is_never_cut_in_half() -> None:
    # SPEC V8: the reason is masked where it is shown; a key cut in half would match no pattern of the redactor
    token = "ghp_" + "A" * 40
    assert shown_answer("x " * 45 + token + " after") == ("x " * 45).strip() + "…"
    assert shown_answer(token * 3) == "…"  # one word longer than the limit: nothing of it is quoted
    assert shown_answer("a\tb\n\nc\x07d") == "a b c d"


def readme_decisions() -> str:
    """The README's bullet on decisions, its lines joined."""
    text = " ".join(doc("graphs/engine.md").split())
    start = text.index("- **Decisions** (SPEC V8)")
    return text[start : text.index("- **Bounds**", start)]


def test_the_readme_says_what_counts_as_a_label_as_the_engine_reads_it() -> None:
    # SPEC V8: each claim of the README's "Decisions" bullet, with its own examples
    said = readme_decisions()
    assert "the answer's own `VERDICT: <label>` lines, read as for routing, all name the same label" in said
    assert "with no verdict line, the whole answer is that label alone" in said
    assert "`Bug.`, `**bug**` and `VERDICT: Bug` choose `BUG`" in said
    assert all(select_label(answer, LABELS).label == "BUG" for answer in ("Bug.", "**bug**", "VERDICT: Bug"))
    assert "a label inside a sentence (`I think it is a BUG`)" in said
    assert "two labels (`VERDICT: BUG` and `VERDICT: FEATURE`), a label outside the list, an empty answer" in said
    nothing = ("I think it is a BUG", "VERDICT: BUG\nVERDICT: FEATURE", "VERDICT: DOCS", "")
    assert all(select_label(answer, LABELS).label is None for answer in nothing)
    assert "the run stops with `invalid_selection` at once, with no second ask" in said
    stopped = _decided("I think it is a BUG")
    assert stopped.run.status is Status.ESCALATED and stopped.run.ledger.calls == 2
    assert "records the label as the graph spells it, or no verdict" in said
    chosen, unchosen = _decided("bug").run.mission(2), stopped.run.mission(2)
    assert chosen is not None and chosen.verdict == "BUG" and unchosen is not None and unchosen.verdict is None
    assert "The stop's reason says why no label was chosen" in said
    assert "it is neither a line `VERDICT: <label>` nor a label alone" in stopped.run.reason.message  # type: ignore[union-attr]
    assert "quotes the start of the answer on one line, at most 100 characters, cut between words" in said
    assert ANSWER_SHOWN == 100 and shown_answer("word " * 40) == ("word " * 20).strip() + "…"
