"""CommandAgent: the agent protocol itself, driven by small real scripts written to tmp_path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.agents.base import AgentCall
from app.agents.command import CommandAgent
from app.engine.record import MissionKind, MissionStatus

PROMPT = "Implement greet().\nÉtape 2 — with unicode ✓ and a trailing line\n"


def make_call(workdir: Path, **changes: object) -> AgentCall:
    fields: dict[str, object] = {
        "prompt": PROMPT,
        "workdir": workdir,
        "run_id": "run-42",
        "stage": "implement",
        "capability": "coding",
        "visit": 2,
        "mission": 7,
        **changes,
    }
    return AgentCall(**fields)  # type: ignore[arg-type]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def python_agent(tmp_path: Path, body: str, name: str = "agent.py") -> CommandAgent:
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    script = scripts / name
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return CommandAgent([sys.executable, str(script)], name="scripted")


def shell_agent(tmp_path: Path, body: str, name: str = "agent.sh") -> CommandAgent:
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    script = scripts / name
    script.write_text("#!/bin/sh\n" + textwrap.dedent(body), encoding="utf-8")
    script.chmod(0o755)
    return CommandAgent([str(script)], name="shell")


REPORTER = """
    import json, os, sys
    stdin = sys.stdin.read()
    prompt_file = os.environ["INTERLOCK_PROMPT_FILE"]
    with open(prompt_file, encoding="utf-8") as handle:
        from_file = handle.read()
    print(json.dumps({
        "stdin": stdin,
        "file": from_file,
        "prompt_file": prompt_file,
        "usage_file": os.environ["INTERLOCK_USAGE_FILE"],
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("INTERLOCK_", "AGENT_TEST_"))},
    }))
"""


def test_prompt_arrives_on_stdin_and_in_the_prompt_file_outside_the_workdir(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: the prompt on standard input and in $INTERLOCK_PROMPT_FILE
    outcome = python_agent(tmp_path, REPORTER).run(make_call(workdir))
    assert outcome.status is MissionStatus.DONE, outcome.answer
    seen = json.loads(outcome.answer)
    assert seen["stdin"] == PROMPT
    assert seen["file"] == PROMPT
    prompt_file = Path(seen["prompt_file"]).resolve()
    assert not prompt_file.is_relative_to(workdir.resolve())
    assert not Path(seen["usage_file"]).resolve().is_relative_to(workdir.resolve())


def test_a_shell_agent_that_only_reads_the_prompt_file_gets_the_same_text(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: $INTERLOCK_PROMPT_FILE holds the prompt
    agent = shell_agent(tmp_path, 'cat "$INTERLOCK_PROMPT_FILE"\n')
    outcome = agent.run(make_call(workdir))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == PROMPT


def test_an_agent_that_ignores_a_large_stdin_still_finishes(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: an agent may read the prompt file and never read stdin
    agent = shell_agent(tmp_path, 'wc -c < "$INTERLOCK_PROMPT_FILE"\n')
    big = "x" * (2 * 1024 * 1024)
    outcome = agent.run(make_call(workdir, prompt=big, timeout_s=30))
    assert outcome.status is MissionStatus.DONE, outcome.answer
    assert outcome.answer.strip() == str(len(big))


def test_every_interlock_variable_is_set_and_cwd_is_the_workdir(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: INTERLOCK_RUN_ID, _STAGE, _CAPABILITY, _VISIT, _MISSION, _WORKDIR
    outcome = python_agent(tmp_path, REPORTER).run(make_call(workdir, kind=MissionKind.AMEND))
    seen = json.loads(outcome.answer)
    env = seen["env"]
    assert env["INTERLOCK_RUN_ID"] == "run-42"
    assert env["INTERLOCK_STAGE"] == "implement"
    assert env["INTERLOCK_CAPABILITY"] == "coding"
    assert env["INTERLOCK_VISIT"] == "2"
    assert env["INTERLOCK_MISSION"] == "7"
    assert Path(env["INTERLOCK_WORKDIR"]).resolve() == workdir.resolve()
    assert env["INTERLOCK_KIND"] == "amend"
    assert Path(seen["cwd"]).resolve() == workdir.resolve()


def test_the_parent_environment_and_the_call_environment_are_both_inherited(
    tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ARCHITECTURE agent protocol: the agent is a command run with the shell's environment (keys, PATH)
    monkeypatch.setenv("AGENT_TEST_FROM_PARENT", "parent-value")
    call = make_call(workdir, env={"AGENT_TEST_FROM_CALL": "call-value"})
    seen = json.loads(python_agent(tmp_path, REPORTER).run(call).answer)
    assert seen["env"]["AGENT_TEST_FROM_PARENT"] == "parent-value"
    assert seen["env"]["AGENT_TEST_FROM_CALL"] == "call-value"


def test_stdout_is_the_answer_and_exit_zero_is_done(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: it prints its answer on standard output; exit 0 means done
    agent = python_agent(
        tmp_path,
        """
        import sys
        sys.stdin.read()
        sys.stderr.write("progress noise\\n")
        sys.stdout.write("Done: greet() added.\\nVERDICT: PASS\\n")
        """,
    )
    outcome = agent.run(make_call(workdir))
    assert outcome.status is MissionStatus.DONE
    assert outcome.exit_code == 0
    assert outcome.answer == "Done: greet() added.\nVERDICT: PASS\n"
    assert outcome.agent == "scripted"
    assert outcome.duration_s > 0


def test_exit_three_is_failed_with_stderr_in_the_answer(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: any other exit means it failed; SPEC E1: the cause is taken from the output
    agent = python_agent(
        tmp_path,
        """
        import sys
        print("partial work")
        sys.stderr.write("fatal: the model refused\\n")
        sys.exit(3)
        """,
    )
    outcome = agent.run(make_call(workdir))
    assert outcome.status is MissionStatus.FAILED
    assert outcome.exit_code == 3
    assert "partial work" in outcome.answer
    assert "fatal: the model refused" in outcome.answer


def test_an_agent_killed_by_a_signal_crashed(tmp_path: Path, workdir: Path) -> None:
    # SPEC E1: a mission that ended crashed is not done
    agent = python_agent(
        tmp_path,
        """
        import os, signal
        print("about to die", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
    )
    outcome = agent.run(make_call(workdir))
    assert outcome.status is MissionStatus.CRASHED
    assert outcome.exit_code == -signal.SIGKILL


def _gone(pid: int, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_timeout_kills_the_agent_and_its_children(tmp_path: Path, workdir: Path) -> None:
    # SPEC E1: timeout; ARCHITECTURE agent protocol: a timed-out agent leaves no process behind
    pid_file = tmp_path / "child.pid"
    agent = python_agent(
        tmp_path,
        """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(os.environ["CHILD_PID_FILE"], "w") as handle:
            handle.write(str(child.pid))
        print("working...", flush=True)
        time.sleep(60)
        """,
    )
    started = time.monotonic()
    outcome = agent.run(make_call(workdir, timeout_s=0.5, env={"CHILD_PID_FILE": str(pid_file)}))
    elapsed = time.monotonic() - started
    assert outcome.status is MissionStatus.TIMEOUT
    assert elapsed < 20, "run() waited for the sleeping processes instead of killing them"
    child_pid = int(pid_file.read_text())
    assert _gone(child_pid), f"child {child_pid} survived the timeout"
    with pytest.raises(ProcessLookupError):
        os.kill(child_pid, 0)


def test_a_missing_executable_fails_with_127_and_says_so(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: an agent that cannot start is a failed mission, never an exception
    missing = tmp_path / "no-such-agent"
    outcome = CommandAgent([str(missing), "--flag"], name="ghost").run(make_call(workdir))
    assert outcome.status is MissionStatus.FAILED
    assert outcome.exit_code == 127
    assert "cannot run" in outcome.answer
    assert str(missing) in outcome.answer


def test_a_missing_command_in_a_shell_line_fails_with_127(workdir: Path) -> None:
    # ARCHITECTURE agent protocol: a command line runs through the shell; exit other than 0 is failed
    outcome = CommandAgent("interlock-no-such-command-xyz --go", name="ghost").run(make_call(workdir))
    assert outcome.status is MissionStatus.FAILED
    assert outcome.exit_code == 127
    assert "interlock-no-such-command-xyz" in outcome.answer


USAGE_WRITER = """
    import os, sys
    sys.stdin.read()
    with open(os.environ["INTERLOCK_USAGE_FILE"], "wb") as handle:
        handle.write(os.environ["USAGE_BYTES"].encode("latin-1"))
    print("the answer")
"""


def test_the_usage_file_is_read_into_usage_model_and_session(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: usage JSON in $INTERLOCK_USAGE_FILE; SPEC P3, W2
    report = {
        "calls": 3,
        "input_tokens": 1200,
        "output_tokens": 340,
        "cost_usd": 0.0425,
        "model": "reported-model",
        "session_id": "sess-9",
    }
    call = make_call(workdir, model="planned-model", env={"USAGE_BYTES": json.dumps(report)})
    outcome = python_agent(tmp_path, USAGE_WRITER).run(call)
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "the answer\n"
    assert (outcome.usage.calls, outcome.usage.input_tokens, outcome.usage.output_tokens) == (3, 1200, 340)
    assert outcome.usage.cost_usd == pytest.approx(0.0425)
    assert outcome.usage.seconds > 0
    assert outcome.model == "reported-model"
    assert outcome.session_id == "sess-9"


def test_a_null_cost_in_the_usage_file_is_an_unknown_cost(tmp_path: Path, workdir: Path) -> None:
    # SPEC P3: an agent that cannot tell its cost says null; that is unknown, never $0
    report = {"calls": 1, "input_tokens": 10, "output_tokens": 2, "cost_usd": None}
    call = make_call(workdir, env={"USAGE_BYTES": json.dumps(report)})
    outcome = python_agent(tmp_path, USAGE_WRITER).run(call)
    assert outcome.status is MissionStatus.DONE and outcome.answer == "the answer\n"
    assert outcome.usage.cost_usd is None and outcome.usage.input_tokens == 10


def test_without_a_usage_file_the_call_model_and_session_are_kept(tmp_path: Path, workdir: Path) -> None:
    # ARCHITECTURE agent protocol: usage is optional ("it may write"); SPEC J3 keeps the session id
    agent = shell_agent(tmp_path, "cat >/dev/null\necho ok\n")
    outcome = agent.run(make_call(workdir, model="m-small", session_id="s-1", kind=MissionKind.RESUME))
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer == "ok\n"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.usage.cost_usd) == (0, 0, 0.0)
    assert outcome.model == "m-small"
    assert outcome.session_id == "s-1"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param("[1, 2, 3]", id="not-an-object"),
        pytest.param('{"input_tokens": "lots"}', id="wrong-type"),
        pytest.param("\xff\xfe\xfa", id="not-utf8"),
        pytest.param('{"input_tokens": 1e999}', id="overflowing-number"),
        pytest.param("[" * 100_000, id="deeply-nested"),
    ],
)
def test_a_malformed_usage_file_is_noted_and_does_not_fail_the_mission(
    tmp_path: Path, workdir: Path, content: str
) -> None:
    # ARCHITECTURE agent protocol: usage is optional; a malformed usage file is noted, never fatal
    call = make_call(workdir, env={"USAGE_BYTES": content})
    outcome = python_agent(tmp_path, USAGE_WRITER).run(call)
    assert outcome.status is MissionStatus.DONE
    assert outcome.answer.startswith("the answer")
    assert "usage file" in outcome.answer
    assert outcome.usage.input_tokens == 0


def test_prompt_and_usage_files_leave_nothing_to_commit(tmp_path: Path, workdir: Path) -> None:
    # SPEC GH2: the runner commits the agent's work, so protocol files must not appear in the tree
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    report = json.dumps({"calls": 1, "input_tokens": 5})
    agent = python_agent(
        tmp_path,
        """
        import json, os, sys
        sys.stdin.read()
        with open(os.environ["INTERLOCK_USAGE_FILE"], "w") as handle:
            handle.write(os.environ["USAGE_JSON"])
        print(json.dumps([os.environ["INTERLOCK_PROMPT_FILE"], os.environ["INTERLOCK_USAGE_FILE"]]))
        """,
    )
    outcome = agent.run(make_call(workdir, env={"USAGE_JSON": report}))
    assert outcome.status is MissionStatus.DONE
    assert outcome.usage.input_tokens == 5
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
    assert sorted(p.name for p in workdir.iterdir()) == [".git"]
    prompt_file, usage_file = (Path(p) for p in json.loads(outcome.answer))
    assert not prompt_file.exists() and not usage_file.exists(), "scratch files outlived the mission"


def test_an_answer_longer_than_the_output_limit_keeps_its_last_lines_and_verdict(tmp_path: Path, workdir: Path) -> None:
    # SPEC V5: the verdict is the answer's last VERDICT line; cutting the end of a long answer would route a
    # FAIL as if no verdict were given (PASS where PASS is a label)
    agent = python_agent(
        tmp_path,
        """
        import sys
        sys.stdin.read()
        sys.stdout.write("first line\\n" + "noise " * 1_000_000 + "\\nVERDICT: FAIL\\n")
        sys.stderr.write("err-start\\n" + "e" * 6_000_000 + "\\nerr-end\\n")
        sys.exit(1)
        """,
    )
    outcome = agent.run(make_call(workdir))
    assert outcome.answer.startswith("first line\n")
    assert "VERDICT: FAIL" in outcome.answer.split("[stderr]")[0]
    assert "bytes of output cut" in outcome.answer
    assert "err-end" in outcome.answer  # the end of stderr, where the cause usually is
    assert len(outcome.answer.encode()) <= 4 * 1024 * 1024 + 5000
