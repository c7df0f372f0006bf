"""Issue 17 attacked: the ledger charges an HTTP agent's retried requests (SPEC P2), but the `calls` a command
agent writes to its usage file are its own count of something Interlock never sent — not logical calls (SPEC P1)
— and a journal written before issue 17 replays them uncharged (SPEC J6)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.engine.budget import record_usage
from app.engine.graph.model import Policy
from app.engine.record import Category, Ledger, Status, Usage
from app.local.config import LocalConfig
from app.local.shell import LocalShell
from app.runner.outcomes import mission_event
from tests.helpers import doc
from tests.local.harness import make_repo
from tests.local.test_runs import LOOP

README = doc("local/agents.md")
AGENT = r"""
import json, os, pathlib, sys
pathlib.Path("src").mkdir(exist_ok=True)
pathlib.Path("src/work.txt").write_text(os.environ["INTERLOCK_MISSION"])
pathlib.Path(os.environ["INTERLOCK_USAGE_FILE"]).write_text(json.dumps({"calls": int(sys.argv[1])}))
print("VERDICT: PASS")
"""


def run_reporting(tmp_path: Path, calls: int, **policy: Any) -> Any:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    make_repo(tmp_path / "repo")
    config = LocalConfig(agent=f"{sys.executable} {script} {calls}", **policy)
    return LocalShell(tmp_path / "repo", config).start(LOOP, "Do the work", "")


def test_a_usage_files_calls_are_not_charged_as_logical_calls(tmp_path: Path) -> None:
    # SPEC P1, P2: two missions dispatched are two calls charged before each, whatever an agent says it made
    run = run_reporting(tmp_path, 10**9)
    assert run.status is Status.AWAITING_MERGE
    assert run.ledger.calls == 2 and [m.usage.calls for m in run.missions] == [10**9, 10**9]
    assert json.loads(json.dumps(run.ledger.json_data()))["calls"] == 2


def test_an_agent_reporting_many_calls_does_not_exhaust_a_call_budget(tmp_path: Path) -> None:
    # SPEC P1, P5: a limit of 4 calls holds two missions; a usage file's count cannot wedge the run past what any
    # raise the stop recommends (`calls=+4`) would lift
    run = run_reporting(tmp_path, 50, policy=Policy(maxCalls=4))
    assert run.status is Status.AWAITING_MERGE and run.ledger.calls == 2


def test_an_http_agents_requests_reach_the_ledger_through_a_jobs_mission_record() -> None:
    # SPEC P2: on GitHub the job's mission record carries the requests its HTTP agent counted; the service charges
    # those beyond the dispatch's call, and a record without them (an old one, a command agent's) charges none more
    stamp = datetime(2026, 12, 2, tzinfo=UTC)
    retried = mission_event({"status": "done", "usage": {"calls": 3, "requests": 3}}, "k", stamp, 1)
    assert retried.usage.requests == 3
    ledger = record_usage(Ledger(calls=1), Category.DELIVER, retried.usage, accepted=False)
    old = mission_event({"status": "done", "usage": {"calls": 3}}, "k", stamp, 1)
    assert (ledger.calls, record_usage(Ledger(calls=1), Category.DELIVER, old.usage, accepted=False).calls) == (3, 1)
    assert "requests" not in Usage(calls=3).json_data()  # SPEC J6: an old record's hash is unchanged


def test_the_readme_says_a_usage_files_calls_are_shown_not_charged() -> None:
    start = README.index("**Every request is charged**")
    text = " ".join(README[start : README.index("\n\n", start)].split())
    assert "The `calls` a command agent writes to its usage file are shown in its mission's usage but never" in text
