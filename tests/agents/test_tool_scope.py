"""A role's tool whitelist, as each agent gets it (SPEC U1): the exact argv of each CLI preset, and what
the outcome says of it — the flags that enforce it, or "not enforced" for an agent that cannot.

The argv is built in code, so these tests need no real agent; one test per preset kind runs a command
agent end to end to check the outcome carries the scope.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from app.agents.base import NOT_ENFORCED, AgentCall, tool_scope
from app.agents.command import CommandAgent
from app.agents.http import OpenAIChatAgent
from app.agents.presets import AiderAgent, ClaudeAgent, CodexAgent
from app.agents.spec import agent_from_spec
from app.engine.record import MissionKind, MissionStatus


def call(tmp_path: Path, tools: tuple[str, ...] = (), **changes: object) -> AgentCall:
    fields: dict[str, object] = {
        "prompt": "Do it.\nVERDICT: PASS\n",
        "workdir": tmp_path,
        "run_id": "run-1",
        "stage": "review",
        "capability": "review",
        "visit": 1,
        "mission": 2,
        "tools": tools,
        "model": "m-small",
        **changes,
    }
    return AgentCall(**fields)  # type: ignore[arg-type]


def test_claude_argv_offers_only_the_whitelisted_tools_and_allows_the_entries(tmp_path: Path) -> None:
    # SPEC U1: a tool outside the whitelist is not offered (--tools), the entries run unprompted (--allowedTools)
    tools = ("Read", "Grep", "Bash(git diff:*)", "Bash(pytest:*)")
    argv = ClaudeAgent(executable="claude").argv(call(tmp_path, tools), tmp_path)
    assert argv == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "m-small",
        "--tools", "Read,Grep,Bash", "--allowedTools", "Read,Grep,Bash(git diff:*),Bash(pytest:*)",
    ]  # fmt: skip
    assert ClaudeAgent().tool_scope(tools) == (
        "enforced: claude --tools Read,Grep,Bash --allowedTools Read,Grep,Bash(git diff:*),Bash(pytest:*)"
    )


def test_claude_argv_without_a_whitelist_has_no_tool_flags(tmp_path: Path) -> None:
    argv = ClaudeAgent(executable="claude").argv(call(tmp_path), tmp_path)
    assert argv == ["claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "m-small"]
    assert ClaudeAgent().tool_scope(()) == ""


def test_codex_argv_maps_a_whitelist_without_write_tools_to_a_read_only_sandbox(tmp_path: Path) -> None:
    # SPEC U1: a reviewer that may only read gets codex's read-only sandbox, approvals never
    argv = CodexAgent(executable="codex").argv(call(tmp_path, ("Read", "Grep", "Glob")), tmp_path)
    last = str(tmp_path / "last.md")
    assert argv == [
        "codex", "--ask-for-approval", "never", "exec", "--json", "--skip-git-repo-check",
        "--sandbox", "read-only", "--output-last-message", last, "--model", "m-small", "-",
    ]  # fmt: skip
    assert CodexAgent().tool_scope(("Read",)) == (
        "partly: codex --ask-for-approval never --sandbox read-only (codex takes no list of tools)"
    )


def test_codex_argv_maps_a_whitelist_with_a_write_tool_to_the_workspace_sandbox(tmp_path: Path) -> None:
    argv = CodexAgent(executable="codex").argv(call(tmp_path, ("Read", "Edit(src/**)")), tmp_path)
    assert argv[:4] == ["codex", "--ask-for-approval", "never", "exec"]
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert "--full-auto" not in argv


def test_codex_argv_without_a_whitelist_is_full_auto_as_before(tmp_path: Path) -> None:
    argv = CodexAgent(executable="codex").argv(call(tmp_path, kind=MissionKind.RESUME, session_id="t-1"), tmp_path)
    assert argv[:4] == ["codex", "exec", "resume", "t-1"]
    assert "--full-auto" in argv and "--sandbox" not in argv and "--ask-for-approval" not in argv


def test_aider_argv_without_write_tools_is_ask_mode(tmp_path: Path) -> None:
    # SPEC U1: aider's file scope: a role that may not write edits nothing
    argv = AiderAgent(executable="aider").argv(call(tmp_path, ("Read", "Grep")), tmp_path)
    assert argv == [
        "aider", "--message-file", str(tmp_path / "prompt.md"), "--yes-always", "--no-auto-commits",
        "--no-pretty", "--no-stream", "--model", "m-small", "--chat-mode", "ask",
    ]  # fmt: skip
    assert AiderAgent().tool_scope(("Read",)) == "partly: aider --chat-mode ask (its file scope)"


def test_aider_argv_scoped_write_tools_become_the_files_it_may_edit(tmp_path: Path) -> None:
    tools = ("Read", "Edit(src/app.py)", "Write(tests/test_app.py)", "Edit(src/app.py)")
    argv = AiderAgent(executable="aider").argv(call(tmp_path, tools), tmp_path)
    assert argv[-4:] == ["--file", "src/app.py", "--file", "tests/test_app.py"]
    assert "--chat-mode" not in argv
    assert AiderAgent().tool_scope(tools) == (
        "partly: aider --file src/app.py --file tests/test_app.py (its file scope)"
    )


@pytest.mark.parametrize("tools", [("Read", "Edit"), ("Edit(src/**)",), ("Read", "Bash(git:*)")])
def test_aider_with_an_unscoped_write_tool_says_not_enforced(tmp_path: Path, tools: tuple[str, ...]) -> None:
    argv = AiderAgent(executable="aider").argv(call(tmp_path, tools), tmp_path)
    assert "--file" not in argv and "--chat-mode" not in argv
    assert AiderAgent().tool_scope(tools) == NOT_ENFORCED


def test_a_command_agent_says_its_whitelist_is_not_enforced(tmp_path: Path) -> None:
    # SPEC U1: never silently nothing: the outcome of a command agent names the whitelist not enforced
    script = "import sys; sys.stdin.read(); print('done'); print('VERDICT: PASS')"
    agent = CommandAgent([sys.executable, "-c", script])
    outcome = agent.run(call(tmp_path, ("Read",)))
    assert outcome.status is MissionStatus.DONE
    assert outcome.tool_scope == NOT_ENFORCED
    assert agent.run(call(tmp_path)).tool_scope == ""


def test_the_demo_agent_says_its_whitelist_is_not_enforced(tmp_path: Path) -> None:
    assert tool_scope(agent_from_spec("demo"), ("Read",)) == NOT_ENFORCED


def test_an_http_agent_says_its_whitelist_is_not_enforced(tmp_path: Path) -> None:
    body = {"choices": [{"message": {"content": "ok\nVERDICT: PASS"}}], "usage": {}, "model": "m-small"}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    agent = OpenAIChatAgent("gpt-x", "http://127.0.0.1:9/v1", None, transport=transport)
    outcome = agent.run(call(tmp_path, ("Read", "Grep")))
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert outcome.tool_scope == NOT_ENFORCED
    assert outcome.model == "m-small"


def test_an_agent_without_a_tool_scope_of_its_own_is_not_enforced() -> None:
    class Bare:
        name = "bare"

    assert tool_scope(Bare(), ("Read",)) == NOT_ENFORCED
    assert tool_scope(Bare(), ()) == ""
