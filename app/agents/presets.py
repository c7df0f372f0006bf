"""Presets for agent CLIs: the protocol translated into each tool's own flags and output.

- Claude Code: ``claude -p --output-format stream-json --verbose``: JSON lines, the first a ``system``
  ``init`` event with the session id, the last a ``result`` event with the answer, usage, cost and session
  id; ``--resume <id>`` for a mission interrupted mid-way. A role's whitelist becomes ``--tools`` (the
  built-in tools offered at all) and ``--allowedTools`` (the entries, patterns such as ``Bash(git:*)``
  included, that run without a permission prompt nobody could answer).
- Codex CLI: ``codex exec --json`` with the prompt on stdin: JSON lines, the first ``thread.started`` with
  the thread (session) id, ``turn.completed`` with usage, ``item.completed`` with the agent's messages;
  ``--output-last-message`` for the answer; ``codex exec resume <id>`` to resume. Codex takes no list of
  tools: a role's whitelist becomes its sandbox, ``read-only`` unless the list holds a tool that writes
  (``WRITE_TOOLS``), else ``workspace-write``, with approvals ``never`` (nobody is there to approve).
- Aider: ``aider --message-file`` with auto-commits off, since Interlock makes the commits. A role's
  whitelist becomes its file scope: no tool that writes is ``--chat-mode ask`` (it edits nothing); write
  tools scoped to files (``Edit(src/app.py)``) add those files with ``--file``; an unscoped write tool
  leaves aider free, and the record says the whitelist is not enforced.

Both JSON-lines presets read the output as it comes and pass the session id on the moment it appears
(``AgentCall.on_session``), so a runner killed mid-mission can still resume that session (SPEC J3).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from app.agents.base import NOT_ENFORCED, WRITE_TOOLS, AgentCall, chargeable, tool_name
from app.agents.command import CommandAgent, LineReader, Parsed
from app.agents.prices import PriceTable, price_table
from app.engine.cost_source import CostSource
from app.engine.record import MissionKind, Usage


class JsonEvents:
    """The JSON-lines events of one run of a tool; the session id is passed on once, when first seen."""

    def __init__(self, on_session: Callable[[str], None] | None = None) -> None:
        self.on_session = on_session
        self.session: str | None = None
        self.problem = ""

    def feed(self, line: str) -> None:
        event = _json(line.strip())
        if isinstance(event, dict):
            self.take(event)

    def take(self, event: dict[str, Any]) -> None:
        raise NotImplementedError

    def reveal(self, session: Any) -> None:
        if not isinstance(session, str) or not session or session == self.session:
            return
        self.session = session
        if self.on_session is None:
            return
        try:
            self.on_session(session)
        except Exception as exc:  # keeping the id is a help for a later resume; the mission goes on
            self.problem = f"the session id {session} could not be recorded: {type(exc).__name__}: {exc}"

    @classmethod
    def of(cls, stdout: str) -> Self:
        """The events of output read after the fact."""
        events = cls()
        for line in stdout.splitlines():
            events.feed(line)
        return events


class ClaudeEvents(JsonEvents):
    def __init__(self, on_session: Callable[[str], None] | None = None) -> None:
        super().__init__(on_session)
        self.result: dict[str, Any] | None = None
        self.model: str | None = None
        self.last_text = ""

    def take(self, event: dict[str, Any]) -> None:
        self.reveal(event.get("session_id"))  # the init event carries it first; every later event too
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init" and isinstance(event.get("model"), str):
            self.model = event["model"]
        elif kind == "assistant":
            text = _message_text(event.get("message"))
            self.last_text = text or self.last_text
        elif kind == "result":
            self.result = event


class CliPreset(CommandAgent):
    """An agent CLI known by name (``program``): the executable to run (the program found on the path unless
    given), and the ``extra`` flags a person adds after Interlock's own."""

    program = ""

    def __init__(self, executable: str | None = None, extra: list[str] | None = None) -> None:
        self.executable = executable or self.program
        super().__init__([self.executable], name=self.program)
        self.extra = extra or []


class ClaudeAgent(CliPreset):
    program = "claude"

    def argv(self, call: AgentCall, scratch: Path) -> list[str]:
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if call.model:
            argv += ["--model", call.model]
        argv += self.tool_flags(call.tools)
        if call.session_id and call.kind is MissionKind.RESUME:
            argv += ["--resume", call.session_id]
        return argv + self.extra

    @staticmethod
    def tool_flags(tools: tuple[str, ...]) -> list[str]:
        """The built-in tools offered (``--tools``, names only) and the entries allowed without a prompt
        (``--allowedTools``, patterns kept): a tool outside the whitelist is not offered (SPEC U1)."""
        if not tools:
            return []
        names = ",".join(dict.fromkeys(tool_name(tool) for tool in tools))
        return ["--tools", names, "--allowedTools", ",".join(tools)]

    def tool_scope(self, tools: tuple[str, ...]) -> str:
        return f"enforced: claude {' '.join(self.tool_flags(tools))}" if tools else ""

    def reader(self, call: AgentCall) -> LineReader:
        return ClaudeEvents(call.on_session)

    def parse(self, stdout: str, call: AgentCall, scratch: Path, reader: LineReader | None) -> Parsed:
        events = reader if isinstance(reader, ClaudeEvents) else ClaudeEvents.of(stdout)
        data = events.result
        if data is None:  # cut short, or output it cannot read: Claude ran, and what it cost is not known
            answer = events.last_text or stdout
            unknown = Usage(calls=1, cost_usd=None, source=CostSource.UNKNOWN)
            return _noted(answer, events.problem), unknown, events.session, events.model
        found = data.get("usage")
        usage_data: dict[str, Any] = found if isinstance(found, dict) else {}
        usage = Usage(
            calls=1,
            input_tokens=_int(usage_data.get("input_tokens")) + _int(usage_data.get("cache_read_input_tokens")),
            output_tokens=_int(usage_data.get("output_tokens")),
            cost_usd=_cost(data),
            seconds=_int(data.get("duration_ms")) / 1000,
        )
        usage = usage.but(source=CostSource.UNKNOWN if usage.cost_usd is None else CostSource.REPORTED)  # SPEC W3
        result = data.get("result")
        answer = result if isinstance(result, str) else events.last_text or stdout
        model = data.get("model") if isinstance(data.get("model"), str) else events.model
        return _noted(answer, events.problem), usage, events.session, model


class CodexEvents(JsonEvents):
    def __init__(self, on_session: Callable[[str], None] | None = None) -> None:
        super().__init__(on_session)
        self.usage = Usage(calls=1)
        self.last_message = ""

    def take(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.reveal(event.get("thread_id"))
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            found = event["usage"]
            self.usage = self.usage.but(
                input_tokens=self.usage.input_tokens + _int(found.get("input_tokens")),
                output_tokens=self.usage.output_tokens + _int(found.get("output_tokens")),
            )
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if str(item.get("type", "")).endswith("message") and isinstance(item.get("text"), str):
                self.last_message = item["text"]


class CodexAgent(CliPreset):
    """Codex reports tokens, not money: its cost is estimated from the price table, else unknown."""

    program = "codex"

    def __init__(
        self, executable: str | None = None, extra: list[str] | None = None, prices: PriceTable | None = None
    ) -> None:
        super().__init__(executable, extra)
        self.prices = prices or price_table()

    def argv(self, call: AgentCall, scratch: Path) -> list[str]:
        approval, sandbox = self.tool_flags(call.tools)
        argv = [self.executable, *approval, "exec"]
        if call.session_id and call.kind is MissionKind.RESUME:
            argv += ["resume", call.session_id]
        argv += ["--json", "--skip-git-repo-check", *sandbox, "--output-last-message", str(scratch / "last.md")]
        if call.model:
            argv += ["--model", call.model]
        return [*argv, *self.extra, "-"]

    @staticmethod
    def tool_flags(tools: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """(flags before ``exec``, flags of ``exec``): without a whitelist ``--full-auto`` as always; with
        one, approvals ``never`` and the sandbox the whitelist allows: ``read-only`` unless a tool writes."""
        if not tools:
            return [], ["--full-auto"]
        writes = any(tool_name(tool) in WRITE_TOOLS for tool in tools)
        return ["--ask-for-approval", "never"], ["--sandbox", "workspace-write" if writes else "read-only"]

    def tool_scope(self, tools: tuple[str, ...]) -> str:
        if not tools:
            return ""
        approval, sandbox = self.tool_flags(tools)
        return f"partly: codex {' '.join([*approval, *sandbox])} (codex takes no list of tools)"

    def reader(self, call: AgentCall) -> LineReader:
        return CodexEvents(call.on_session)

    def parse(self, stdout: str, call: AgentCall, scratch: Path, reader: LineReader | None) -> Parsed:
        events = reader if isinstance(reader, CodexEvents) else CodexEvents.of(stdout)
        written = scratch / "last.md"
        answer = written.read_text(encoding="utf-8") if written.exists() else events.last_message or stdout
        usage = self.prices.estimate(events.usage, call.model)
        return _noted(answer, events.problem), usage, events.session, None


class AiderAgent(CliPreset):
    program = "aider"

    def argv(self, call: AgentCall, scratch: Path) -> list[str]:
        argv = [
            self.executable,
            "--message-file",
            str(scratch / "prompt.md"),
            "--yes-always",
            "--no-auto-commits",
            "--no-pretty",
            "--no-stream",
        ]
        if call.model:
            argv += ["--model", call.model]
        return argv + self.tool_flags(call.tools) + self.extra

    @staticmethod
    def tool_flags(tools: tuple[str, ...]) -> list[str]:
        """The file scope of a whitelist: ask mode when no tool writes, ``--file`` for each file a write
        tool is scoped to; nothing when a write tool is unscoped (aider may then edit any file)."""
        writers = [tool for tool in tools if tool_name(tool) in WRITE_TOOLS]
        if tools and not writers:
            return ["--chat-mode", "ask"]
        files = [_scoped_file(tool) for tool in writers]
        if not writers or any(file is None for file in files):
            return []
        return [flag for file in dict.fromkeys(files) if file for flag in ("--file", file)]

    def tool_scope(self, tools: tuple[str, ...]) -> str:
        if not tools:
            return ""
        flags = self.tool_flags(tools)
        return f"partly: aider {' '.join(flags)} (its file scope)" if flags else NOT_ENFORCED


def _scoped_file(tool: str) -> str | None:
    """The file a write tool is scoped to (``Edit(src/app.py)``); ``None`` for an unscoped tool or a pattern
    (``Edit(src/**)``), which aider cannot take as a file."""
    name, _, rest = tool.partition("(")
    path = rest[:-1].strip() if rest.endswith(")") else ""
    if not path or any(char in path for char in "*?[:") or name.strip() == "Bash":
        return None
    return path


def _message_text(message: Any) -> str:
    """The text blocks of an assistant message of the stream."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return ""
    blocks = [b.get("text") for b in message["content"] if isinstance(b, dict) and b.get("type") == "text"]
    return "".join(text for text in blocks if isinstance(text, str))


def _noted(answer: str, problem: str) -> str:
    return f"{answer.rstrip()}\n\n[interlock] {problem}" if problem else answer


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a line nested too deeply to read is no event either (issue 11, 10)
        return None


def _cost(result: dict[str, Any]) -> float | None:
    """The cost Claude Code reports in its result; none reported is an unknown cost, not a free call, and so is
    one no budget can charge: negative (it would lower the charge) or not finite (NaN is saved as ``null``)."""
    for key in ("total_cost_usd", "cost_usd"):
        value = result.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if chargeable(value) else None
    return None


def _int(value: Any) -> int:
    """A reported count; a negative or non-finite one counts as none."""
    return int(value) if chargeable(value) else 0
