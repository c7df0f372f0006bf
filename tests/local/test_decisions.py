"""A local run's decisions and their outcome (SPEC E2, E3): a real run fails, a person resumes it from another
process, and the journal, the decision file and ``journey`` say who chose which option and when."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

from tests.local.harness import AGENT
from tests.local.test_processes import interlock, setup


def show(repo: Path, path: str) -> str:
    ref = f"interlock/state:{path}"
    return subprocess.run(["git", "show", ref], cwd=repo, capture_output=True, text=True, check=True).stdout


def test_a_resume_records_who_decided_and_when_in_the_journal_and_the_decision_file(tmp_path: Path) -> None:
    # SPEC E2, E3: the decision file offers each option as the exact command, with a recommendation; a person's
    # `interlock resume` ends the wait, and the outcome (option, who, when) is kept in the journal
    repo, env = setup(tmp_path, {"work": {"answer": "it broke", "exit": 3}})
    ran = interlock("run", str(tmp_path / "graph.json"), "--request", "Work", "--agent", AGENT, "--run-id", "d",
                    env=env, repo=repo)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    asked = show(repo, "runs/d/decision.md")
    assert "| resume **(recommended)** | `interlock resume d` |" in asked and "`interlock abandon d`" in asked
    assert "## Outcome" not in asked
    waiting = json.loads(interlock("journey", "d", "--json", env=env, repo=repo).stdout)
    assert [row["kind"] for row in waiting] == ["deliver", "decision"] and waiting[1]["choice"] is None
    assert "(waiting for a person)" in interlock("journey", "d", env=env, repo=repo).stdout

    (tmp_path / "script.json").write_text(json.dumps({"work": {"answer": "VERDICT: PASS", "write": {"w.txt": "x"}},
                                                       "review": {"answer": "VERDICT: PASS"}}))  # fmt: skip
    resumed = interlock("resume", "d", env={**env, "USER": "alice"}, repo=repo)
    assert resumed.returncode == 0, resumed.stderr

    record = json.loads(show(repo, "runs/d.json"))
    [decision] = record["decisions"]
    assert (decision["choice"], decision["taken"], decision["by"]) == ("resume", "resume", "alice")
    assert (decision["reason"], decision["recommended"], decision["stage"]) == ("mission_failed", "resume", "work")
    when = datetime.fromisoformat(decision["decided_at"])
    said = f"Decided: resume by alice at {when:%Y-%m-%d %H:%M:%S} UTC (as recommended)."
    assert said in resumed.stderr  # said as it happens, like every message of a local run
    decided = show(repo, "runs/d/decision.md")
    assert decided.startswith(asked.rstrip("\n")) and decided.endswith(f"## Outcome\n\n{said}\n")

    journey = json.loads(interlock("journey", "d", "--json", env=env, repo=repo).stdout)
    assert [row["kind"] for row in journey] == ["deliver", "decision", "deliver", "deliver"]
    assert journey[1]["by"] == "alice" and journey[1]["decided_at"] == decision["decided_at"]
    text = interlock("journey", "d", env=env, repo=repo).stdout
    line = next(line for line in text.splitlines() if "mission_failed" in line)
    assert "alice" in line and f"{when:%Y-%m-%d %H:%M:%S} UTC" in line and "| resume " in line


def test_the_readme_says_what_a_decision_records() -> None:
    from app.engine.record import DECISION_WINDOW, Choice
    from tests.helpers import doc

    text = " ".join(doc("graphs/engine.md").split())
    assert f"`decisions` in `status --json`, the newest {DECISION_WINDOW}; `decision_count` counts them all" in text
    *others, last = list(Choice)  # SPEC P5 added `budget` at the end
    assert f"(`choice`: {', '.join(f'`{c.value}`' for c in others)} or `{last.value}`;" in text
    assert "who (`by`: the commenter on GitHub, `$USER` locally) and when (`decided_at`)" in text
    assert "`Decided: resume by alice at 2026-12-01 21:50:03 UTC (as recommended).`" in text
    assert "`interlock journey` lists each decision after the missions that came before it" in text
    assert "A stop a person asked for is no decision." in text
