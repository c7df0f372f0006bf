"""Small things that looked careless (issue 28, part 7): each says what a person means, or refuses the typo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.graph.cost_bound import counted
from app.github.config import ConfigInvalid, parse_config
from app.local.reports import render_status
from tests.engine.driver import Driver, loop_graph
from tests.helpers import ROOT, doc


def test_a_count_takes_the_noun_its_number_takes() -> None:
    assert [counted(1, "call"), counted(1.0, "unit"), counted(2.5, "unit"), counted(0, "attempt")] == [
        "1 call",
        "1 unit",
        "2.5 units",
        "0 attempts",
    ]


def test_the_status_of_a_run_with_one_call_says_one_call() -> None:
    d = Driver(loop_graph())  # the first mission is charged at its dispatch (SPEC P2)
    assert "  budget   1 attempt, 1 call, 1 unit, 0 accepted" in render_status(d.run, d.graph)


def test_a_max_tokens_no_model_writes_is_refused_naming_the_key() -> None:
    role = "{name: dev, capabilities: [coding], fullAuthority: true, maxTokens: 1000000000}"
    with pytest.raises(ConfigInvalid, match=r"teams.main.roles.0.maxTokens: Input should be less than or equal"):
        parse_config(f"teams:\n  main:\n    roles:\n      - {role}\n".encode())


def test_an_amendment_without_words_is_refused_before_anything_runs(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    said = subprocess.run(
        [sys.executable, "-m", "app", "amend", "r1", "--note", " ", "--repo", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert said.returncode == 2 and "the changes requested need words" in said.stderr


def test_the_readme_says_which_typos_are_refused() -> None:
    text = " ".join(doc("local/agents.md", "graphs/engine.md").split())
    assert "more than one raise may add (1,000,000 calls or dollars, 10,000 attempts, 10^12 units" in text
    assert "A `maxTokens` above 1,000,000 is refused as the typo it is" in text
