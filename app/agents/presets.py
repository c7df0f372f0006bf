"""Presets for agent CLIs: the protocol translated into each tool's own flags and output.

- Claude Code: ``claude -p --output-format json`` (result, usage, cost, session id), ``--resume`` for a
  mission interrupted mid-way, ``--allowedTools`` from the role's whitelist.
- Codex CLI: ``codex exec`` with the prompt on stdin, ``--json`` events for the session id and usage,
  ``--output-last-message`` for the answer; ``codex exec resume <id>`` to resume.
- Aider: ``aider --message-file`` with auto-commits off, since Interlock makes the commits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.agents.base import AgentCall
from app.agents.command import CommandAgent
from app.engine.record import MissionKind, Usage


class ClaudeAgent(CommandAgent):
    def __init__(self, executable: str = "claude", extra: list[str] | None = None) -> None:
        super().__init__([executable], name="claude")
        self.executable = executable
        self.extra = extra or []

    def argv(self, call: AgentCall, scratch: Path) -> list[str]:
        argv = [self.executable, "-p", "--output-format", "json"]
        if call.model:
            argv += ["--model", call.model]
        if call.tools:
            argv += ["--allowedTools", ",".join(call.tools)]
        if call.session_id and call.kind is MissionKind.RESUME:
            argv += ["--resume", call.session_id]
        return argv + self.extra

    def parse(self, stdout: str, call: AgentCall, scratch: Path) -> tuple[str, Usage | None, str | None, str | None]:
        data = _last_json_object(stdout)
        if data is None:
            return stdout, None, None, None
        usage_data = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        usage = Usage(
            calls=1,
            input_tokens=_int(usage_data.get("input_tokens")) + _int(usage_data.get("cache_read_input_tokens")),
            output_tokens=_int(usage_data.get("output_tokens")),
            cost_usd=float(data.get("total_cost_usd") or data.get("cost_usd") or 0.0),
            seconds=_int(data.get("duration_ms")) / 1000,
        )
        answer = data.get("result") if isinstance(data.get("result"), str) else stdout
        session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
        return answer, usage, session, data.get("model") if isinstance(data.get("model"), str) else None


class CodexAgent(CommandAgent):
    def __init__(self, executable: str = "codex", extra: list[str] | None = None) -> None:
        super().__init__([executable], name="codex")
        self.executable = executable
        self.extra = extra or []

    def argv(self, call: AgentCall, scratch: Path) -> list[str]:
        argv = [self.executable, "exec"]
        if call.session_id and call.kind is MissionKind.RESUME:
            argv += ["resume", call.session_id]
        argv += ["--json", "--skip-git-repo-check", "--full-auto", "--output-last-message", str(scratch / "last.md")]
        if call.model:
            argv += ["--model", call.model]
        return [*argv, *self.extra, "-"]

    def parse(self, stdout: str, call: AgentCall, scratch: Path) -> tuple[str, Usage | None, str | None, str | None]:
        session, usage, last_message = None, Usage(calls=1), ""
        for line in stdout.splitlines():
            event = _json(line)
            if not isinstance(event, dict):
                continue
            session = event.get("thread_id") or event.get("session_id") or session
            found = event.get("usage")
            if isinstance(found, dict):
                usage = usage.but(
                    input_tokens=usage.input_tokens + _int(found.get("input_tokens")),
                    output_tokens=usage.output_tokens + _int(found.get("output_tokens")),
                )
            item = event.get("item")
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                last_message = item["text"]
        written = scratch / "last.md"
        answer = written.read_text(encoding="utf-8") if written.exists() else last_message or stdout
        return answer, usage, session if isinstance(session, str) else None, None


class AiderAgent(CommandAgent):
    def __init__(self, executable: str = "aider", extra: list[str] | None = None) -> None:
        super().__init__([executable], name="aider")
        self.executable = executable
        self.extra = extra or []

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
        return argv + self.extra


def _last_json_object(text: str) -> dict[str, Any] | None:
    whole = _json(text.strip())
    if isinstance(whole, dict):
        return whole
    for line in reversed(text.splitlines()):
        data = _json(line)
        if isinstance(data, dict):
            return data
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
