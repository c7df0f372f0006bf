"""Issue 17 attacked: runs that went through the new paths — a context overflow cut and sent again (its record
holding `sent_prompt`), retried requests charged beyond the dispatch — replay to the same records (SPEC J6)."""

from __future__ import annotations

from pathlib import Path

from tests.agents.llm_server import StandIn, serving
from tests.local.test_small_model_run import interlock, run_on


def test_a_run_whose_review_overflowed_and_was_cut_verifies(tmp_path: Path) -> None:
    # SPEC J6, P2: the ledger's extra calls come from the events' usage, so a replay charges them again alike
    stand_in = StandIn(n_ctx=1100, fill=True, fail_first=1)
    with serving(stand_in) as url:
        run, stderr, ledger = run_on(tmp_path, url, context={"cut_bytes": 800})
    assert run["status"] == "awaiting_merge", stderr
    assert ledger["calls"] == len(stand_in.requests) == 4  # the 503, the draft, the review's overflow and its retry
    checked = interlock(tmp_path, "verify", "r1")
    assert checked.returncode == 0 and "verified" in checked.stdout, checked.stdout + checked.stderr
