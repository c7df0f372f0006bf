"""Any command as an agent: the protocol itself, and the base the CLI presets build on."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from app.agents.base import AgentCall, AgentOutcome, read_usage
from app.agents.environment import process_environment
from app.engine.record import MissionStatus, Usage

OUTPUT_LIMIT = 4 * 1024 * 1024


class CommandAgent:
    """Runs ``argv`` (or a shell line) in the working tree with the mission on stdin.

    The prompt and usage files live in a private temporary folder, outside the working tree, so they are
    never committed. A timeout kills the whole process group: an agent's children die with it.
    """

    def __init__(self, command: str | list[str], name: str = "command") -> None:
        self.command = command
        self.name = name

    def argv(self, call: AgentCall, scratch: Path) -> list[str]:
        if isinstance(self.command, list):
            return list(self.command)
        return ["/bin/sh", "-c", self.command]

    def parse(self, stdout: str, call: AgentCall, scratch: Path) -> tuple[str, Usage | None, str | None, str | None]:
        """(answer, usage, session id, model) from the output; presets override this."""
        return stdout, None, None, None

    def run(self, call: AgentCall) -> AgentOutcome:
        with tempfile.TemporaryDirectory(prefix="interlock-mission-") as folder:
            scratch = Path(folder)
            prompt_file, usage_file = scratch / "prompt.md", scratch / "usage.json"
            prompt_file.write_text(call.prompt, encoding="utf-8")
            files = {"INTERLOCK_PROMPT_FILE": str(prompt_file), "INTERLOCK_USAGE_FILE": str(usage_file)}
            env = process_environment(call, files)
            started = time.monotonic()
            code, stdout, stderr, timed_out = run_process(self.argv(call, scratch), call, env)
            elapsed = time.monotonic() - started
            return self._outcome(call, scratch, usage_file, (code, stdout, stderr, timed_out), elapsed)

    def _outcome(
        self,
        call: AgentCall,
        scratch: Path,
        usage_file: Path,
        result: tuple[int | None, str, str, bool],
        elapsed: float,
    ) -> AgentOutcome:
        code, stdout, stderr, timed_out = result
        answer, usage, session, model = self.parse(stdout, call, scratch)
        file_usage, file_model, file_session, problem = read_usage(usage_file)
        usage = usage or file_usage
        usage = usage.but(seconds=usage.seconds or round(elapsed, 3))
        if timed_out:
            status = MissionStatus.TIMEOUT
        elif code is None or code < 0:
            status = MissionStatus.CRASHED
        else:
            status = MissionStatus.DONE if code == 0 else MissionStatus.FAILED
        if status is not MissionStatus.DONE and stderr.strip():
            answer = f"{answer.rstrip()}\n\n[stderr]\n{stderr.strip()[-4000:]}".lstrip()
        if problem:
            answer = f"{answer.rstrip()}\n\n[interlock] {problem}"
        return AgentOutcome(
            status=status,
            answer=answer,
            exit_code=code,
            usage=usage,
            session_id=session or file_session or call.session_id,
            duration_s=round(elapsed, 3),
            agent=self.name,
            model=model or file_model or call.model,
        )


def run_process(
    argv: list[str], call: AgentCall, env: dict[str, str], stdin: str | None = None
) -> tuple[int | None, str, str, bool]:
    """(exit code, stdout, stderr, timed out). A missing executable is exit 127, like a shell says."""
    try:
        process = subprocess.Popen(
            argv,
            cwd=call.workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        return 127, "", f"cannot run {shlex.join(argv)}: {exc}", False
    try:
        out, err = process.communicate(
            (call.prompt if stdin is None else stdin).encode("utf-8"), timeout=call.timeout_s
        )
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(process)
        out, err = process.communicate()
        timed_out = True
    return process.returncode, _text(out), _text(err), timed_out


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _text(raw: bytes) -> str:
    return raw[:OUTPUT_LIMIT].decode("utf-8", errors="replace")
