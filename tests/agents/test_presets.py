"""Presets for agent CLIs, driven by fake `claude`, `codex` and `aider` executables first on PATH."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentCall
from app.agents.command import CommandAgent
from app.agents.http import AnthropicAgent, OpenAIChatAgent
from app.agents.presets import AiderAgent, ClaudeAgent, CodexAgent
from app.agents.spec import AgentSpecError, agent_from_spec
from app.engine.record import MissionKind, MissionStatus

PROMPT = "Review the change.\nEnd with VERDICT: PASS or FAIL.\n"

# Each fake reads its stdin, records argv/stdin (and anything tool-specific) to $FAKE_RECORD, checks what
# the real tool would insist on (exit 2 with a message otherwise), then prints output in the tool's format.
COMMON = """
import json, os, sys
argv = sys.argv[1:]
stdin = sys.stdin.read()
record = {"argv": argv, "stdin": stdin, "cwd": os.getcwd()}

def save():
    with open(os.environ["FAKE_RECORD"], "w", encoding="utf-8") as handle:
        json.dump(record, handle)

def refuse(message):
    save()
    sys.stderr.write(message + "\\n")
    sys.exit(2)

def option(name):
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None
"""

# The fakes print the tools' real event shapes (Claude Code's stream-json, Codex's exec --json events). With
# FAKE_WAIT_FOR set, they stop after the event that names the session until that file exists: only a preset
# that passes the session id on while the agent still runs can let them finish.
WAIT = """
import time

def wait_if_asked():
    sys.stdout.flush()
    path = os.environ.get("FAKE_WAIT_FOR")
    deadline = time.monotonic() + 10
    while path and not os.path.exists(path):
        if time.monotonic() > deadline:
            refuse("fake: the session id was not passed on while the agent ran")
        time.sleep(0.02)
"""

FAKE_CLAUDE = (
    WAIT
    + """
if "-p" not in argv or option("--output-format") != "stream-json":
    refuse("claude: expected -p --output-format stream-json")
if "--verbose" not in argv:
    refuse("Error: When using --print, --output-format=stream-json requires --verbose")
if not stdin:
    refuse("claude: no prompt on stdin")
save()
if "FAKE_STDOUT" in os.environ:
    sys.stdout.write(os.environ["FAKE_STDOUT"])
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
session = os.environ.get("FAKE_SESSION", "claude-session-1")
model = "claude-sonnet-4-5-20250929"
print(json.dumps({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": session,
                  "tools": ["Read", "Edit", "Bash"], "mcp_servers": [], "model": model,
                  "permissionMode": "default", "apiKeySource": "ANTHROPIC_API_KEY"}))
wait_if_asked()
print(json.dumps({"type": "assistant", "session_id": session, "parent_tool_use_id": None,
                  "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                              "content": [{"type": "text", "text": "Reading the diff."}],
                              "usage": {"input_tokens": 900, "output_tokens": 40}}}))
if os.environ.get("FAKE_NO_RESULT"):
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2300,
                  "duration_api_ms": 2100, "num_turns": 2, "result": "Looks good.\\nVERDICT: PASS",
                  "session_id": session, "total_cost_usd": 0.0375,
                  "usage": {"input_tokens": 1500, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0, "output_tokens": 210}}))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""
)

FAKE_CODEX = (
    WAIT
    + """
if argv[:1] in (["--ask-for-approval"], ["-a"]):  # codex's own options come before the subcommand
    record["approval"] = argv[1]
    argv = argv[2:]
if not argv or argv[0] != "exec":
    refuse("codex: expected the exec subcommand")
if argv[-1] != "-" or not stdin:
    refuse("codex: expected the prompt on stdin as -")
if "--json" not in argv:
    refuse("codex: expected --json")
last = option("--output-last-message")
if last is None:
    refuse("codex: expected --output-last-message FILE")
record["last_message_file"] = last
save()
thread = argv[2] if argv[1:2] == ["resume"] else os.environ.get("FAKE_SESSION", "thread-77")
print("codex banner that is not json")
print(json.dumps({"type": "thread.started", "thread_id": thread}))
wait_if_asked()
if os.environ.get("FAKE_WRITE_LAST", "1") == "1":
    with open(last, "w", encoding="utf-8") as handle:
        handle.write("Final answer from the last-message file.\\nVERDICT: PASS")
events = [
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "thinking it over"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "streamed message"}},
    {"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 7}},
    {"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 3}},
]
for event in events:
    print(json.dumps(event))
"""
)

FAKE_AIDER = """
message_file = option("--message-file")
if message_file is None or not os.path.exists(message_file):
    refuse("aider: expected --message-file FILE")
with open(message_file, encoding="utf-8") as handle:
    record["message"] = handle.read()
record["message_file"] = message_file
save()
print("Applied edit to greet.py")
"""


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, body in (("claude", FAKE_CLAUDE), ("codex", FAKE_CODEX), ("aider", FAKE_AIDER)):
        script = folder / name
        text = f"#!{sys.executable}\n" + textwrap.dedent(COMMON) + textwrap.dedent(body)
        script.write_text(text, encoding="utf-8")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def record_file(tmp_path: Path) -> Path:
    return tmp_path / "record.json"


def make_call(workdir: Path, record_file: Path, env: dict[str, str] | None = None, **changes: Any) -> AgentCall:
    fields: dict[str, Any] = {
        "prompt": PROMPT,
        "workdir": workdir,
        "run_id": "run-1",
        "stage": "review",
        "capability": "review",
        "visit": 1,
        "mission": 3,
        "timeout_s": 30,
        "env": {"FAKE_RECORD": str(record_file), **(env or {})},
        **changes,
    }
    return AgentCall(**fields)


def recorded(record_file: Path) -> dict[str, Any]:
    return json.loads(record_file.read_text(encoding="utf-8"))


def option(argv: list[str], name: str) -> str | None:
    assert argv.count(name) <= 1, f"{name} given twice: {argv}"
    return argv[argv.index(name) + 1] if name in argv else None


# --- Claude Code -------------------------------------------------------------------------------------


def test_claude_runs_in_print_mode_with_stream_json_output_and_the_prompt_on_stdin(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # ARCHITECTURE agent protocol: presets translate it (claude -p --output-format stream-json --verbose)
    outcome = ClaudeAgent().run(make_call(workdir, record_file))
    seen = recorded(record_file)
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert "-p" in seen["argv"]
    assert option(seen["argv"], "--output-format") == "stream-json"
    assert "--verbose" in seen["argv"]
    assert seen["stdin"] == PROMPT
    assert Path(seen["cwd"]).resolve() == workdir.resolve()
    assert "--model" not in seen["argv"]
    assert "--allowedTools" not in seen["argv"]
    assert "--resume" not in seen["argv"]
    assert outcome.agent == "claude"


def test_claude_gets_the_model_and_the_role_tool_whitelist(fake_bin: Path, workdir: Path, record_file: Path) -> None:
    # SPEC U1: a tool outside the role's whitelist is not offered; the role names the model
    call = make_call(workdir, record_file, model="claude-haiku-x", tools=("Read", "Grep"))
    outcome = ClaudeAgent().run(call)
    seen = recorded(record_file)
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert option(seen["argv"], "--model") == "claude-haiku-x"
    assert option(seen["argv"], "--allowedTools") == "Read,Grep"


@pytest.mark.parametrize(
    ("kind", "session", "resumes"),
    [
        (MissionKind.RESUME, "sid-123", True),
        (MissionKind.DELIVER, "sid-123", False),
        (MissionKind.RETRY, "sid-123", False),
        (MissionKind.RESUME, None, False),
    ],
)
def test_claude_resumes_only_a_resume_mission_with_a_session(
    fake_bin: Path, workdir: Path, record_file: Path, kind: MissionKind, session: str | None, resumes: bool
) -> None:
    # SPEC J3: an interrupted mission is resumed with the agent's own session id (kind resume)
    outcome = ClaudeAgent().run(make_call(workdir, record_file, kind=kind, session_id=session))
    argv = recorded(record_file)["argv"]
    assert outcome.status is MissionStatus.DONE, outcome.answer
    if resumes:
        assert option(argv, "--resume") == "sid-123"
    else:
        assert "--resume" not in argv


def test_claude_result_event_gives_answer_session_cost_and_tokens(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC P3: real usage reported (tokens, USD); SPEC J3: the agent's own session id is kept
    outcome = ClaudeAgent().run(make_call(workdir, record_file))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "Looks good.\nVERDICT: PASS"
    assert outcome.session_id == "claude-session-1"
    assert outcome.usage.cost_usd == pytest.approx(0.0375)
    assert outcome.usage.estimated is False
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (1500, 210)
    assert outcome.usage.calls == 1
    assert outcome.model == "claude-sonnet-4-5-20250929"  # from the init event


def test_claude_passes_the_session_id_on_while_it_still_runs(
    fake_bin: Path, workdir: Path, record_file: Path, tmp_path: Path
) -> None:
    # SPEC J3: the session id is known before the mission ends, so a killed mission can be resumed in it
    go = tmp_path / "go"
    seen: list[str] = []

    def keep(session: str) -> None:
        seen.append(session)
        go.touch()  # the fake prints its init event, then waits for this file before going on

    call = make_call(workdir, record_file, env={"FAKE_WAIT_FOR": str(go), "FAKE_SESSION": "4b1e-sid"}, on_session=keep)
    outcome = ClaudeAgent().run(call)
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert seen == ["4b1e-sid"]  # once, though every later event repeats it
    assert outcome.session_id == "4b1e-sid"


def test_claude_a_session_that_cannot_be_recorded_is_noted_and_the_mission_goes_on(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC J3: keeping the session id helps a later resume; failing to keep it fails nothing
    def broken(session: str) -> None:
        raise OSError("disk full")

    outcome = ClaudeAgent().run(make_call(workdir, record_file, on_session=broken))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer.startswith("Looks good.\nVERDICT: PASS")
    assert "the session id claude-session-1 could not be recorded: OSError: disk full" in outcome.answer


def test_claude_without_a_result_event_answers_with_its_last_message(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC E1: a mission cut short is not done; its cause is what the agent last said, not raw JSON lines
    call = make_call(workdir, record_file, env={"FAKE_NO_RESULT": "1", "FAKE_EXIT": "1"})
    outcome = ClaudeAgent().run(call)
    assert outcome.status is MissionStatus.FAILED
    assert outcome.answer == "Reading the diff."
    assert outcome.session_id == "claude-session-1"


def test_claude_output_that_is_not_json_is_the_answer_as_is(fake_bin: Path, workdir: Path, record_file: Path) -> None:
    # ARCHITECTURE agent protocol: stdout is the answer when the preset cannot read the tool's format
    raw = "Plain text, no JSON here.\nVERDICT: FAIL\n"
    outcome = ClaudeAgent().run(make_call(workdir, record_file, env={"FAKE_STDOUT": raw}))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == raw
    assert outcome.session_id is None
    assert outcome.usage.cost_usd is None  # SPEC P3: Claude ran; what it cost is unknown, never $0


def test_claude_output_of_json_nested_too_deeply_is_the_answer_as_is_not_a_crash(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # issue 11, 10: an agent's output is input too; a line no JSON reader can hold (a RecursionError) ended the
    # runner with exit 70 and left its run `running` without a process. It is text like any line that is not JSON
    raw = "[" * 50_000 + "]" * 50_000 + "\nVERDICT: PASS\n"
    outcome = ClaudeAgent().run(make_call(workdir, record_file, env={"FAKE_STDOUT": raw}))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == raw


def test_claude_cut_short_before_its_result_has_an_unknown_cost_not_zero(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC P3: a Claude Code run killed or failed before its result event spent money nobody measured
    call = make_call(workdir, record_file, env={"FAKE_NO_RESULT": "1", "FAKE_EXIT": "1"})
    outcome = ClaudeAgent().run(call)
    assert outcome.usage.cost_usd is None
    assert outcome.usage.calls == 1


def test_claude_result_without_a_cost_has_an_unknown_cost(fake_bin: Path, workdir: Path, record_file: Path) -> None:
    # SPEC P3: a result event that names no cost is not a free call
    result = json.dumps({"type": "result", "result": "Done.\nVERDICT: PASS", "session_id": "s-1", "usage": {}})
    outcome = ClaudeAgent().run(make_call(workdir, record_file, env={"FAKE_STDOUT": result}))
    assert outcome.answer == "Done.\nVERDICT: PASS"
    assert outcome.usage.cost_usd is None


@pytest.mark.parametrize("cost", ["-0.5", "Infinity", "NaN", "1e999"])
def test_claude_a_cost_or_tokens_that_cannot_be_charged_are_unknown_never_a_negative_charge(
    fake_bin: Path, workdir: Path, record_file: Path, cost: str
) -> None:
    # SPEC P2, P3: a negative cost would lower what the budget charges; NaN is saved as null and leaves a record no
    # one can load; so such a figure is an unknown cost, and a negative token count is none
    usage = '{"input_tokens": -900, "output_tokens": 12}'
    result = f'{{"type": "result", "result": "Done.", "session_id": "s-1", "total_cost_usd": {cost}, "usage": {usage}}}'
    outcome = ClaudeAgent().run(make_call(workdir, record_file, env={"FAKE_STDOUT": result}))
    assert outcome.usage.cost_usd is None
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (0, 12)


def test_claude_exiting_non_zero_is_failed_with_its_result_as_the_cause(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC E1: a mission that exits non-zero is not done; the cause is taken from the worker's output
    error = json.dumps({"type": "result", "is_error": True, "result": "Credit balance is too low", "session_id": "s-e"})
    outcome = ClaudeAgent().run(make_call(workdir, record_file, env={"FAKE_STDOUT": error, "FAKE_EXIT": "1"}))
    assert outcome.status is MissionStatus.FAILED
    assert outcome.exit_code == 1
    assert "Credit balance is too low" in outcome.answer
    assert outcome.session_id == "s-e"


# --- Codex CLI ---------------------------------------------------------------------------------------


def test_codex_exec_with_json_events_last_message_file_and_prompt_on_stdin(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # ARCHITECTURE agent protocol: presets translate it (codex exec --json --output-last-message FILE -)
    outcome = CodexAgent().run(make_call(workdir, record_file, model="o4-mini"))
    seen = recorded(record_file)
    argv = seen["argv"]
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert argv[0] == "exec"
    assert "resume" not in argv
    assert "--json" in argv
    assert argv[-1] == "-"
    assert seen["stdin"] == PROMPT
    assert option(argv, "--model") == "o4-mini"
    last = Path(seen["last_message_file"]).resolve()
    assert option(argv, "--output-last-message") == seen["last_message_file"]
    assert not last.is_relative_to(workdir.resolve())
    assert list(workdir.iterdir()) == []
    assert outcome.agent == "codex"


def test_codex_passes_the_thread_id_on_while_it_still_runs(
    fake_bin: Path, workdir: Path, record_file: Path, tmp_path: Path
) -> None:
    # SPEC J3: the thread.started event names the session before the mission ends
    go = tmp_path / "go"
    seen: list[str] = []

    def keep(session: str) -> None:
        seen.append(session)
        go.touch()

    env = {"FAKE_WAIT_FOR": str(go), "FAKE_SESSION": "0199a213-81c0"}
    call = make_call(workdir, record_file, env=env, on_session=keep)
    outcome = CodexAgent().run(call)
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert seen == ["0199a213-81c0"]
    assert outcome.session_id == "0199a213-81c0"


def test_codex_reads_answer_from_last_message_session_from_thread_and_sums_usage(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC P3: usage summed over the JSONL events; SPEC J3: the thread id is the session
    outcome = CodexAgent().run(make_call(workdir, record_file))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "Final answer from the last-message file.\nVERDICT: PASS"
    assert outcome.session_id == "thread-77"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (150, 10)
    assert outcome.usage.cost_usd is None  # SPEC P3: tokens, no model named, no price: unknown, never $0


def test_codex_cost_is_estimated_from_the_price_table_for_a_model_it_prices(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC P3: Codex reports tokens, not money: tokens x the dated price table, marked an estimate
    outcome = CodexAgent().run(make_call(workdir, record_file, model="o4-mini"))
    assert outcome.usage.cost_usd == pytest.approx((150 * 1.1 + 10 * 4.4) / 1_000_000)
    assert outcome.usage.estimated is True


def test_codex_without_a_last_message_file_answers_with_the_last_agent_message(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # ARCHITECTURE agent protocol: presets read the tool's own output when the answer file is absent
    outcome = CodexAgent().run(make_call(workdir, record_file, env={"FAKE_WRITE_LAST": "0"}))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "streamed message"


@pytest.mark.parametrize(("kind", "resumes"), [(MissionKind.RESUME, True), (MissionKind.DELIVER, False)])
def test_codex_resume_is_exec_resume_with_the_session(
    fake_bin: Path, workdir: Path, record_file: Path, kind: MissionKind, resumes: bool
) -> None:
    # SPEC J3: an interrupted mission is resumed with the agent's own session id (kind resume)
    outcome = CodexAgent().run(make_call(workdir, record_file, kind=kind, session_id="thread-5"))
    argv = recorded(record_file)["argv"]
    assert outcome.status is MissionStatus.DONE, outcome.answer
    if resumes:
        assert argv[:3] == ["exec", "resume", "thread-5"]
    else:
        assert "resume" not in argv and "thread-5" not in argv


# --- Aider -------------------------------------------------------------------------------------------


def test_aider_gets_a_message_file_with_the_prompt_no_auto_commits_and_the_model(
    fake_bin: Path, workdir: Path, record_file: Path
) -> None:
    # SPEC GH2: Interlock makes the commits (aider --no-auto-commits); ARCHITECTURE agent protocol presets
    outcome = AiderAgent().run(make_call(workdir, record_file, model="sonnet"))
    seen = recorded(record_file)
    argv = seen["argv"]
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert seen["message"] == PROMPT
    assert option(argv, "--message-file") == seen["message_file"]
    assert not Path(seen["message_file"]).resolve().is_relative_to(workdir.resolve())
    assert "--yes-always" in argv
    assert "--no-auto-commits" in argv
    assert option(argv, "--model") == "sonnet"
    assert outcome.answer == "Applied edit to greet.py\n"
    assert outcome.agent == "aider"


def test_aider_without_a_model_passes_no_model_flag(fake_bin: Path, workdir: Path, record_file: Path) -> None:
    # SPEC U1: the role's model is passed only when the role names one
    outcome = AiderAgent().run(make_call(workdir, record_file))
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert "--model" not in recorded(record_file)["argv"]


# --- agent_from_spec ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "cls"), [("claude", ClaudeAgent), ("codex", CodexAgent), ("aider", AiderAgent)])
def test_agent_from_spec_presets(spec: str, cls: type) -> None:
    # SPEC U1: a role's agent is a command or a preset
    agent = agent_from_spec(spec)
    assert type(agent) is cls
    assert agent.name == spec


def test_agent_from_spec_demo_is_the_scripted_demo_agent(workdir: Path) -> None:
    # ARCHITECTURE agent protocol: a scripted agent drives the demo deterministically
    agent = agent_from_spec("demo")
    assert type(agent) is CommandAgent
    assert agent.name == "demo"
    call = AgentCall(
        prompt="plan it", workdir=workdir, run_id="r", stage="plan", capability="planning", visit=1, mission=1
    )
    outcome = agent.run(call)
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert "Plan" in outcome.answer


def test_agent_from_spec_openai_with_url(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC E4: a cheap model through an OpenAI-compatible API
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = agent_from_spec("openai:gpt-x@http://host/v1")
    assert type(agent) is OpenAIChatAgent
    assert agent.model == "gpt-x"
    assert agent.base_url == "http://host/v1"
    assert agent.api_key == "sk-test"


def test_agent_from_spec_openai_without_url_uses_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC E4: a cheap model through an OpenAI-compatible API
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = agent_from_spec("openai:gpt-4o-mini")
    assert type(agent) is OpenAIChatAgent
    assert (agent.model, agent.base_url) == ("gpt-4o-mini", "https://api.openai.com/v1")


def test_agent_from_spec_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC E4: a cheap model through the Anthropic API
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-test")
    agent = agent_from_spec("anthropic:m")
    assert type(agent) is AnthropicAgent
    assert agent.model == "m"
    assert agent.base_url == "https://api.anthropic.com"
    assert agent.api_key == "ak-test"


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("./agents/review.sh --strict", "review.sh"),
        ("/usr/local/bin/my-agent", "my-agent"),
        ("python -m my_agent", "python"),
        ("claude-code-wrapper", "claude-code-wrapper"),
    ],
)
def test_agent_from_spec_anything_else_is_a_command(spec: str, name: str) -> None:
    # ARCHITECTURE agent protocol: an agent is any command
    agent = agent_from_spec(spec)
    assert type(agent) is CommandAgent
    assert agent.command == spec
    assert agent.name == name


@pytest.mark.parametrize("spec", ["", "   "])
def test_agent_from_spec_refuses_an_empty_command(spec: str) -> None:
    # ARCHITECTURE agent protocol: an agent is a command; an empty one is a configuration error
    with pytest.raises(AgentSpecError):
        agent_from_spec(spec)
