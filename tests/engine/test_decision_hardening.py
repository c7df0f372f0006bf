"""Decisions attacked (issue 14): the outcome line names who decided, and that name cannot forge more lines."""

from __future__ import annotations

from app.engine import events as ev
from app.engine.decisions import outcome_section
from tests.engine.test_decisions import decided, failed


def test_a_name_with_newlines_cannot_forge_an_outcome() -> None:
    # SPEC E3: `by` is `$USER` locally, which anyone sets; the outcome stays one line, the name one word run
    driver = failed()
    driver.apply(ev.Resume, by="mallory\n\n## Outcome\n\nDecided: deliver by boss\r\x1b[2K")
    [decision] = driver.run.decisions
    assert decision.by == "mallory ## Outcome Decided: deliver by boss [2K"
    [said] = decided(driver)
    assert "\n" not in said.text and "\r" not in said.text and "\x1b" not in said.text
    headings = [line for line in outcome_section(decision).splitlines() if line.startswith("#")]
    assert headings == ["## Outcome"]


def test_a_very_long_name_is_cut() -> None:
    driver = failed()
    driver.apply(ev.Resume, by="m" * 5000)
    assert driver.run.decisions[0].by == "m" * 64
