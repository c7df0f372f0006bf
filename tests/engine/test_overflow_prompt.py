"""The shorter prompt of a mission whose server found it longer than the model's context (issue 17, SPEC C)."""

from __future__ import annotations

from app.engine.prompt import assemble_prompt, overflow_parts
from tests.engine.driver import Driver, loop_graph

DRAFT = "draft line\n" * 800  # 8,800 bytes: an answer written until the model's context was full
REQUEST = "Add hello()"


def review_after_two_drafts() -> Driver:
    d = Driver(loop_graph(review={"extraPrompt": "Check the draft."}), body=REQUEST)
    d.finish("first " + DRAFT)
    d.finish("Needs work.\nVERDICT: FAIL")
    d.finish("second " + DRAFT)
    return d


def test_the_shorter_prompt_cuts_results_and_keeps_request_instructions_and_contract() -> None:
    # SPEC C1, C3, V1: the request, the stage's instructions and the verdict contract stay whole
    parts = review_after_two_drafts().dispatched().prompt
    full = assemble_prompt(parts)
    cut = overflow_parts(parts)
    assert cut is not None
    short = assemble_prompt(cut)
    assert len(full) > len(DRAFT) + 2000  # the newest draft whole, the first at the cut tier (2,000 bytes)
    assert len(short) < len(full) - len(DRAFT)  # the newest cut to 2,000 bytes, the first to a history line
    for kept in (REQUEST, "Check the draft.", "VERDICT: <label>", "PASS, FAIL", "NEEDS_INPUT"):
        assert kept in short, kept
    # the newest result at the cut tier's size, with its marker; the older ones as history lines
    assert "second draft line" in short and "more bytes in mission record #3" in short
    assert "first draft line" not in short and "#1 work v1 (deliver)" in short
    assert cut.context_data.tiers == parts.context_data.tiers  # the run's own tiers are not changed


def test_nothing_left_to_cut_gives_no_shorter_prompt() -> None:
    # issue 17: a context already at its tightest cannot be cut again; the agent then fails naming the overflow
    d = Driver(loop_graph(), body=REQUEST)
    assert overflow_parts(d.dispatched().prompt) is None  # no result yet: only the request, never cut (SPEC C1)
    parts = review_after_two_drafts().dispatched().prompt
    once = overflow_parts(parts)
    assert once is not None and overflow_parts(once) is None
