"""Whether an agent spec or a check line can run here: its program found, its key set, its server listening.

An agent is resolved by ``agent_from_spec`` itself — the very function a run uses — so what is checked is
what will run: the preset's program, the HTTP agent's base URL and key as read from the environment, or the
command line's programs.
"""

from __future__ import annotations

import os
import shlex
import socket
from pathlib import Path
from urllib.parse import urlsplit

from app.agents.base import Agent
from app.agents.command import CommandAgent
from app.agents.http import ChatAgent
from app.agents.presets import AiderAgent, ClaudeAgent, CodexAgent
from app.agents.spec import agent_from_spec
from app.engine.errors import InterlockError
from app.engine.findings import Finding, FindingCode, error, ok, warning
from app.local.programs import TreeMode, importable, locate, python_module, read_line

INSTALL = {
    "claude": "install Claude Code (`npm install -g @anthropic-ai/claude-code`)",
    "codex": "install the Codex CLI (`npm install -g @openai/codex`)",
    "aider": "install aider (`python -m pip install aider-install && aider-install`)",
}
KEY_VARIABLE = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
HOSTED = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
VENDOR = {"openai": "OpenAI", "anthropic": "Anthropic"}
BASE_VARIABLE = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
CONNECT_TIMEOUT_S = 2.0
SPECS = "a preset (claude, codex, aider, demo), openai:MODEL[@URL], anthropic:MODEL[@URL], or a command line"
TEST_VARIABLE = "INTERLOCK_TEST_COMMAND"


def agent_findings(spec: str, subject: str, workdir: Path, tree_mode: TreeMode | None) -> list[Finding]:
    try:
        agent: Agent = agent_from_spec(spec)
    except InterlockError as exc:
        return [error(FindingCode.AGENT_SPEC, subject, str(exc), f"name {SPECS}")]
    if isinstance(agent, ChatAgent):
        return http_findings(agent, subject)
    if spec == "demo":
        return [ok(FindingCode.AGENT_PROGRAM, subject, "the built-in scripted agent")]
    if isinstance(agent, ClaudeAgent | CodexAgent | AiderAgent):
        path, why = locate(agent.executable, os.environ, tree_mode)
        if path is None:
            fix = f"{INSTALL[agent.name]}, or name another agent with --agent or `agent:` in the config"
            return [error(FindingCode.AGENT_PROGRAM, subject, why, fix)]
        return [ok(FindingCode.AGENT_PROGRAM, subject, f"runs {path}")]
    assert isinstance(agent, CommandAgent)
    line = agent.command if isinstance(agent.command, str) else shlex.join(agent.command)
    fix = "install {program}, or correct the agent's command line"
    return line_findings(line, subject, FindingCode.AGENT_PROGRAM, fix, workdir, tree_mode)


def check_findings(line: str, subject: str, workdir: Path, tree_mode: TreeMode | None) -> list[Finding]:
    fix = "install {program}, or change the node's `check`"
    if TEST_VARIABLE in line:
        fix = f"install {{program}}, or set {TEST_VARIABLE} to the repository's test command"
    return line_findings(line, subject, FindingCode.CHECK_PROGRAM, fix, workdir, tree_mode)


def line_findings(
    line: str, subject: str, code: FindingCode, fix: str, workdir: Path, tree_mode: TreeMode | None
) -> list[Finding]:
    """Every program of a shell line, looked up as ``sh`` will; ``python -m x`` also checks ``x`` imports."""
    reading = read_line(line, os.environ)
    found: list[Finding] = []
    ran: list[str] = []
    for call in reading.invocations:
        path, why = locate(call.program, os.environ, tree_mode)
        if path is None:
            found.append(error(code, subject, why, _missing_fix(call.program, fix)))
            continue
        module = python_module(call)
        ran.append(f"{path} -m {module}" if module else path)
        if module is not None and importable(path, module, workdir) is False:
            module_fix = f"install the package that provides `{module}` for {path},{fix.partition(',')[2]}"
            found.append(error(FindingCode.PYTHON_MODULE, subject, f"{path} cannot import `{module}`", module_fix))
    if reading.unchecked:
        found.append(
            warning(
                code,
                subject,
                f"not checked: {reading.unchecked} is known only when the line runs",
                "run the line by hand in the repository to make sure it works",
            )
        )
    if not found:
        found.append(ok(code, subject, f"runs {', '.join(ran)}" if ran else "runs shell builtins only"))
    return found


def _missing_fix(program: str, fix: str) -> str:
    if "/" not in program:
        return fix.format(program=f"`{program}`")
    alternative = fix.partition(",")[2]
    if os.path.isabs(program):
        return f"create {program} with its executable bit set,{alternative}"
    return f"commit {program} to the base branch with its executable bit (`git update-index --chmod=+x`),{alternative}"


def http_findings(agent: ChatAgent, subject: str) -> list[Finding]:
    """The key a hosted API needs, set before any request; a self-hosted server listening."""
    variable = KEY_VARIABLE.get(agent.name, "the API key")
    hosted = agent.base_url.startswith(HOSTED.get(agent.name, "\0"))
    if agent.api_key:
        found = [ok(FindingCode.AGENT_KEY, subject, f"{variable} is set")]
    elif hosted:
        fix = f"export {variable} with your {VENDOR.get(agent.name, agent.name)} API key, or name another agent"
        found = [error(FindingCode.AGENT_KEY, subject, f"{variable} is not set: {agent.base_url} needs it", fix)]
    else:
        found = [ok(FindingCode.AGENT_KEY, subject, f"{variable} is not set: requests go without a key")]
    if not hosted:
        found.append(endpoint_finding(agent.base_url, subject, BASE_VARIABLE.get(agent.name, "the base URL")))
    return found


def endpoint_finding(url: str, subject: str, variable: str) -> Finding:
    """A TCP connection to a self-hosted server: refused or unresolvable is an error (no run would get an
    answer); slow is a warning. Hosted APIs are not probed: their address is not in doubt, their key is."""
    parts = urlsplit(url)
    fix = f"start the server (Ollama: `ollama serve`), or correct the URL after `@` in the spec or in {variable}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return error(FindingCode.AGENT_ENDPOINT, subject, f"{url!r} is not an http(s) URL", fix)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S).close()
    except socket.gaierror:
        return error(FindingCode.AGENT_ENDPOINT, subject, f"cannot reach {url}: unknown host {parts.hostname}", fix)
    except TimeoutError:
        message = f"{url} did not accept a connection within {CONNECT_TIMEOUT_S:g}s"
        return warning(FindingCode.AGENT_ENDPOINT, subject, message, fix)
    except ConnectionRefusedError:
        return error(FindingCode.AGENT_ENDPOINT, subject, f"cannot reach {url}: connection refused", fix)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return error(FindingCode.AGENT_ENDPOINT, subject, f"cannot reach {url}: {reason}", fix)
    return ok(FindingCode.AGENT_ENDPOINT, subject, f"{url} accepts connections")
