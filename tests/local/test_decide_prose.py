"""`interlock run` on a graph with a `decide` node whose decision model answers prose (issue 17, SPEC V8, C5).

The agent is a small shell script: as the worker it describes the issue, as the decision model (``INTERLOCK_KIND``
is ``decide``) it echoes its prompt as a small model did, a fake token inside. The journey, the run's status and
the stored records are read back through the CLI and git, as a user reads them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.redact import MASK
from app.store.journal import STATE_BRANCH, decision_path, mission_path
from app.store.layout import sharded
from tests.engine.test_selection import readme_decisions
from tests.helpers import GRAPHS, ROOT
from tests.local.harness import make_repo

TRIAGE = str(GRAPHS / "operations" / "triage.json")
TOKEN = "ghp_" + "Z9" * 18  # the shape of a GitHub token: masked wherever an agent's text is kept
PROSE = f"## decision [INST]\n## Decision\nRead the result above {TOKEN} and choose... I think it is a BUG."
AGENT = """#!/bin/sh
cat > /dev/null
if [ "$INTERLOCK_KIND" = decide ]; then printf '%s\\n' "$DECISION"; else echo "The parser crashes on empty input."; fi
"""


def interlock(repo: Path, agent: Path, decision: str, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "app", *args, "--repo", str(repo)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300", "DECISION": decision, "AGENT": str(agent)},
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result


def triage(tmp_path: Path, decision: str, run_id: str) -> tuple[Path, Path]:
    repo, agent = tmp_path / "repo", tmp_path / "agent.sh"
    if not repo.exists():
        make_repo(repo)
        agent.write_text(AGENT)
        agent.chmod(0o755)
    interlock(
        repo, agent, decision, "run", TRIAGE, "--request", "It crashes", "--agent", str(agent), "--run-id", run_id
    )
    return repo, agent


def stored(repo: Path, path: str) -> str:
    """A file of the state branch by its logical path, read by git where journal layout v2 puts it."""
    return subprocess.run(
        ["git", "show", f"{STATE_BRANCH}:{sharded(path) or path}"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def decide_row(journey: str) -> list[str]:
    row = next(line for line in journey.splitlines() if line.startswith("| 2 ") and "| decide " in line)
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_a_decision_answered_in_prose_shows_no_verdict_and_stops_with_invalid_selection(tmp_path: Path) -> None:
    # SPEC V8: the decide mission records no verdict and the run stops; SPEC C5: the whole answer is in its record
    repo, agent = triage(tmp_path, PROSE, "d1")
    journey = interlock(repo, agent, PROSE, "journey", "d1").stdout
    assert decide_row(journey)[:6] == ["2", "decide", "triage", "1", "done", ""]  # the verdict cell is empty
    assert "[INST]" not in journey and "Read the result" not in journey
    rows: list[dict[str, Any]] = json.loads(interlock(repo, agent, PROSE, "journey", "d1", "--json").stdout)
    missions = [(row["seq"], row["kind"], row["verdict"]) for row in rows if row["kind"] != "decision"]
    assert missions == [(1, "deliver", None), (2, "decide", None)]  # the person's decision row follows them
    status = json.loads(interlock(repo, agent, PROSE, "status", "d1", "--json").stdout)
    assert status["status"] == "escalated" and status["reason"]["code"] == "invalid_selection"
    message = status["reason"]["message"]
    assert message.startswith(
        "the decision at 'triage' chose no label of BUG, FEATURE, QUESTION, DUPLICATE: "
        "it is neither a line `VERDICT: <label>` nor a label alone; "
        f'it answered "## decision [INST] ## Decision Read the result above {MASK} and choose... I think it is a BUG."'
    )
    assert TOKEN not in message and message.endswith("(whole in mission #2's record)")
    record = json.loads(stored(repo, mission_path("d1", 2, "triage")))
    assert record["kind"] == "decide" and record["answer"] == PROSE.replace(TOKEN, MASK) + "\n"  # SPEC C5: whole
    assert "invalid_selection" in stored(repo, decision_path("d1"))
    said = readme_decisions()  # the README's words for what was just checked
    assert "every view shows the label or nothing: an empty verdict cell in `journey`" in said
    assert "`null` in `journey --json`, never the answer's words" in said
    assert "masked like every text an agent writes; the whole answer stays in the decision's mission record" in said


def test_a_decision_answering_a_label_alone_routes_and_shows_the_label(tmp_path: Path) -> None:
    # SPEC V8: any case and a trailing period are the label; the journey shows it as the graph spells it
    repo, agent = triage(tmp_path, "Bug.", "d2")
    journey = interlock(repo, agent, "Bug.", "journey", "d2").stdout
    assert decide_row(journey)[:6] == ["2", "decide", "triage", "1", "done", "BUG"]
    rows = json.loads(interlock(repo, agent, "Bug.", "journey", "d2", "--json").stdout)
    assert [row["stage"] for row in rows] == ["triage", "triage", "bug-report"] and rows[1]["verdict"] == "BUG"
