"""Agent sessions survive a killed runner: stand-in `claude` and `codex` programs on PATH print the tools' real
first events (Claude Code's stream-json `system`/`init`, Codex's `thread.started`) and then hang; the real
`interlock run` process is killed with SIGKILL, and `interlock resume` must hand the agent its session back."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.local.harness import make_repo

GRAPH = {
    "name": "one-review",
    "entry": "review",
    "nodes": [{"stage": "review", "capability": "review"}],
    "edges": [{"from": "review", "verdict": "PASS", "to": "__end__"}],
}

# Both stand-ins log their arguments, and wait (until their runner dies) unless asked to resume.
COMMON = """
import json, os, sys, time
argv = sys.argv[1:]
sys.stdin.read()
with open(os.environ["STANDIN_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(argv) + "\\n")

def say(event):
    print(json.dumps(event), flush=True)

def hang():
    parent = os.getppid()
    deadline = time.monotonic() + 60
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(1)
"""

CLAUDE = """
resumed = argv[argv.index("--resume") + 1] if "--resume" in argv else None
session = resumed or "6a1f2c3e-claude-session"
say({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": session, "tools": ["Read", "Edit"],
     "mcp_servers": [], "model": "claude-sonnet-4-5-20250929", "permissionMode": "default",
     "apiKeySource": "ANTHROPIC_API_KEY"})
if resumed is None:
    hang()
say({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200, "num_turns": 1,
     "result": "Picked up where I stopped.\\nVERDICT: PASS", "session_id": session, "total_cost_usd": 0.012,
     "usage": {"input_tokens": 300, "output_tokens": 20}})
"""

CODEX = """
resumed = argv[2] if argv[:2] == ["exec", "resume"] else None
thread = resumed or "0199a213-81c0-7800-8aa1-bbab2a035a53"
say({"type": "thread.started", "thread_id": thread})
if resumed is None:
    hang()
with open(argv[argv.index("--output-last-message") + 1], "w", encoding="utf-8") as last:
    last.write("Picked up where I stopped.\\nVERDICT: PASS")
say({"type": "turn.started"})
say({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "Picked up."}})
say({"type": "turn.completed", "usage": {"input_tokens": 300, "cached_input_tokens": 0, "output_tokens": 20}})
"""


def stand_ins(tmp: Path) -> dict[str, str]:
    folder = tmp / "bin"
    folder.mkdir()
    for name, body in (("claude", CLAUDE), ("codex", CODEX)):
        script = folder / name
        script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(COMMON) + textwrap.dedent(body))
        script.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
        "STANDIN_LOG": str(tmp / "argv.log"),
        "PYTHONPATH": str(ROOT),
    }


def record(repo: Path, run_id: str) -> dict[str, Any] | None:
    shown = subprocess.run(
        ["git", "show", f"interlock/state:runs/{run_id}.json"], cwd=repo, capture_output=True, text=True
    )
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def wait_for_session(repo: Path, run_id: str, runner: subprocess.Popen[str], seconds: float = 20) -> dict[str, Any]:
    """The in-flight record once it names the agent's session; the runner must still be working then."""
    deadline = time.monotonic() + seconds
    while True:
        found = record(repo, run_id)
        if found and found.get("waiting") and found["waiting"].get("session_id"):
            return found
        assert runner.poll() is None, f"the runner ended early: {runner.communicate()}"
        assert time.monotonic() < deadline, f"no session id in the in-flight record: {found}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("agent", "session"), [("claude", "6a1f2c3e-claude-session"), ("codex", "0199a213-81c0-7800-8aa1-bbab2a035a53")]
)
def test_kill_9_mid_mission_then_resume_continues_the_agents_own_session(
    tmp_path: Path, agent: str, session: str
) -> None:
    # SPEC J3: an interrupted mission resumes first, kind resume, in the agent's own session
    repo = tmp_path / "repo"
    make_repo(repo)
    (tmp_path / "graph.json").write_text(json.dumps(GRAPH))
    env = stand_ins(tmp_path)
    runner = subprocess.Popen(
        [sys.executable, "-m", "app", "run", str(tmp_path / "graph.json"), "--request", "Review it", "--agent", agent,
         "--repo", str(repo), "--run-id", "killed", "--gates", "stop"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        in_flight = wait_for_session(repo, "killed", runner)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(runner.pid, signal.SIGKILL)  # the runner dies mid-mission, like a lost machine
        runner.communicate(timeout=10)
    assert (in_flight["status"], in_flight["waiting"]["seq"], in_flight["waiting"]["session_id"]) == (
        "running",
        1,
        session,
    )
    resumed = subprocess.run(
        [sys.executable, "-m", "app", "resume", "killed", "--agent", agent, "--repo", str(repo), "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(resumed.stdout)
    calls = [json.loads(line) for line in (tmp_path / "argv.log").read_text().splitlines()]
    assert len(calls) == 2
    assert not any(arg in calls[0] for arg in ("--resume", "resume"))
    if agent == "codex":
        assert calls[1][:3] == ["exec", "resume", session]
    else:
        assert any(calls[1][i : i + 2] == ["--resume", session] for i in range(len(calls[1])))
    assert final["status"] == "awaiting_merge"
    assert [(m["seq"], m["kind"], m["status"], m["session_id"]) for m in final["missions"]] == [
        (1, "deliver", "crashed", session),
        (2, "resume", "done", session),
    ]
