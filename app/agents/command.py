"""Any command as an agent: the protocol itself, and the base the CLI presets build on."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol

from app.agents.base import NOT_ENFORCED, AgentCall, AgentOutcome, read_usage
from app.agents.environment import process_environment
from app.engine.record import MissionStatus, Usage

OUTPUT_LIMIT = 4 * 1024 * 1024
LINE_LIMIT = 1024 * 1024  # a longer line is kept in the output but not handed to a line reader
Parsed = tuple[str, Usage | None, str | None, str | None]  # answer, usage, session id, model


class LineReader(Protocol):
    """Reads an agent's standard output line by line while the agent runs (presets of JSON-lines tools)."""

    def feed(self, line: str) -> None: ...


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

    def tool_scope(self, tools: tuple[str, ...]) -> str:
        """How this agent keeps to a role's tool whitelist: a command line takes no whitelist, so it is said
        to be not enforced (the prompt still lists the tools); presets that can enforce one say how."""
        return NOT_ENFORCED if tools else ""

    def reader(self, call: AgentCall) -> LineReader | None:
        """What reads the output as it comes, if anything; presets that see a session id early return one."""
        return None

    def parse(self, stdout: str, call: AgentCall, scratch: Path, reader: LineReader | None) -> Parsed:
        """(answer, usage, session id, model) from the output and the reader; presets override this."""
        return stdout, None, None, None

    def run(self, call: AgentCall) -> AgentOutcome:
        with tempfile.TemporaryDirectory(prefix="interlock-mission-") as folder:
            scratch = Path(folder)
            prompt_file, usage_file = scratch / "prompt.md", scratch / "usage.json"
            prompt_file.write_text(call.prompt, encoding="utf-8")
            files = {"INTERLOCK_PROMPT_FILE": str(prompt_file), "INTERLOCK_USAGE_FILE": str(usage_file)}
            env = process_environment(call, files)
            started = time.monotonic()
            reader = self.reader(call)
            on_line = reader.feed if reader is not None else None
            result = run_process(self.argv(call, scratch), call, env, on_line=on_line)
            elapsed = time.monotonic() - started
            parsed = self.parse(result[1], call, scratch, reader)
            return self._outcome(call, parsed, usage_file, result, elapsed)

    def _outcome(
        self,
        call: AgentCall,
        parsed: Parsed,
        usage_file: Path,
        result: tuple[int | None, str, str, bool],
        elapsed: float,
    ) -> AgentOutcome:
        code, _stdout, stderr, timed_out = result
        answer, usage, session, model = parsed
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
            tool_scope=self.tool_scope(call.tools),
        )


def run_process(
    argv: list[str],
    call: AgentCall,
    env: dict[str, str],
    stdin: str | None = None,
    on_line: Callable[[str], None] | None = None,
) -> tuple[int | None, str, str, bool]:
    """(exit code, stdout, stderr, timed out). A missing executable is exit 127, like a shell says.

    Standard output is read as a stream, each line handed to ``on_line`` as it comes, so a preset can pass
    on what the agent reveals mid-way (its session id); stdin and stderr are served by threads meanwhile,
    and a timer kills the whole process group when the time is up."""
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
    if call.on_start is not None:
        call.on_start(process.pid)
    prompt = (call.prompt if stdin is None else stdin).encode("utf-8")
    code, out, err, timed_out = _serve(process, prompt, call.timeout_s, on_line)
    return code, _text(out), _text(err), timed_out


def _serve(
    process: subprocess.Popen[bytes], prompt: bytes, timeout_s: float, on_line: Callable[[str], None] | None
) -> tuple[int | None, bytes, bytes, bool]:
    """Feed the prompt and drain stderr in threads while this thread reads stdout; the timer kills the group."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    expired = threading.Event()
    timer = threading.Timer(timeout_s, _expire, args=(process, expired))
    errors: list[bytes] = []
    helpers = [
        threading.Thread(target=_feed, args=(process.stdin, prompt)),
        threading.Thread(target=_drain, args=(process.stderr, errors)),
        timer,
    ]
    for helper in helpers:
        helper.daemon = True
        helper.start()
    try:
        out = _read_lines(process.stdout, on_line)
        process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:  # the line reader failed: leave no agent behind
            _kill_group(process)
            process.wait()
    for helper in helpers:
        helper.join()
    process.stdout.close()
    process.stderr.close()
    return process.returncode, out, b"".join(errors), expired.is_set()


def _expire(process: subprocess.Popen[bytes], expired: threading.Event) -> None:
    expired.set()
    _kill_group(process)


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the prompt and close stdin; an agent that exits without reading it is not an error."""
    with contextlib.suppress(BrokenPipeError, OSError):
        stream.write(data)
    with contextlib.suppress(BrokenPipeError, OSError):
        stream.close()


class Kept:
    """At most ``OUTPUT_LIMIT`` bytes of a stream: its first half and its last half, the cut marked.

    The end matters most: the verdict line comes last, and an answer whose last bytes were dropped would
    route as if it had no verdict (``PASS`` where ``PASS`` is a label)."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0

    def add(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        self.head += chunk[:room]
        self.tail += chunk[max(room, 0) :]
        if len(self.tail) > 2 * self.half:  # trimmed now and then, not on every chunk
            self.trim()

    def trim(self) -> None:
        extra = len(self.tail) - self.half
        if extra > 0:
            del self.tail[:extra]
            self.cut += extra

    def value(self) -> bytes:
        self.trim()
        marker = f"\n[… {self.cut} bytes of output cut …]\n".encode() if self.cut else b""
        return bytes(self.head) + marker + bytes(self.tail)


def _drain(stream: IO[bytes], into: list[bytes]) -> None:
    kept = Kept()
    for chunk in iter(lambda: stream.read(65536), b""):
        kept.add(chunk)
    into.append(kept.value())


def _read_lines(stream: IO[bytes], on_line: Callable[[str], None] | None) -> bytes:
    """The output (its first and last ``OUTPUT_LIMIT / 2`` bytes), each whole line handed to ``on_line`` as
    it comes."""
    kept = Kept()
    pending = b""
    for chunk in iter(lambda: stream.readline(LINE_LIMIT), b""):
        kept.add(chunk)
        if on_line is None:
            continue
        pending = pending + chunk if len(pending) < LINE_LIMIT else pending
        if chunk.endswith(b"\n"):
            if len(pending) <= LINE_LIMIT:
                on_line(pending.decode("utf-8", errors="replace"))
            pending = b""
    if on_line is not None and pending and len(pending) <= LINE_LIMIT:
        on_line(pending.decode("utf-8", errors="replace"))
    return kept.value()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")
