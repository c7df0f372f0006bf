"""Reading a shell line as /bin/sh would, to find its programs before a run starts (issue 10: problems are
found before the first call is charged). Each reading is compared with what sh itself runs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from app.local.programs import expand, importable, locate, python_module, read_line


def programs(line: str, env: dict[str, str] | None = None) -> list[str]:
    return [call.program for call in read_line(line, env or {}).invocations]


@pytest.mark.parametrize(
    ("line", "env", "expected"),
    [
        ("${INTERLOCK_TEST_COMMAND:-python -m pytest -q}", {}, "python -m pytest -q"),
        ("${INTERLOCK_TEST_COMMAND:-python -m pytest -q}", {"INTERLOCK_TEST_COMMAND": "make test"}, "make test"),
        ("${INTERLOCK_TEST_COMMAND:-python -m pytest -q}", {"INTERLOCK_TEST_COMMAND": ""}, "python -m pytest -q"),
        ("${X-fallback}", {"X": ""}, ""),
        ("${X:+set} $Y", {"X": "1", "Y": "why"}, "set why"),
        ("echo '${X:-not expanded}'", {}, "echo '${X:-not expanded}'"),
    ],
)
def test_expansion_agrees_with_sh(line: str, env: dict[str, str], expected: str) -> None:
    assert expand(line, env) == expected
    sh = subprocess.run(["/bin/sh", "-c", f'printf "%s\\n" w {line}'], env=env, text=True, capture_output=True)
    assert ["w", *shlex.split(expected)] == sh.stdout.splitlines()  # the same words as sh makes


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("${INTERLOCK_TEST_COMMAND:-python -m pytest -q}", ["python"]),
        ("cd sub && make test 2>&1 | tee log.txt", ["make", "tee"]),
        ("FOO=1 BAR=2 ./run.sh > out.txt < in.txt", ["./run.sh"]),
        ("if [ -f x ]; then pytest; else ruff check; fi", ["pytest", "ruff"]),
        ("for f in a b; do lint $f; done", ["lint"]),
        ("f() { pytest; }; f", ["pytest"]),
        ("command -v uv || pip install uv", ["pip"]),
        ("exec env -i PATH=/bin claude -p", ["claude"]),
        ("echo $(date) && (cd x && npm test)", ["npm"]),
        ("first\nsecond --flag", ["first", "second"]),
        ("true; :", []),
    ],
)
def test_the_programs_of_a_line(line: str, expected: list[str]) -> None:
    assert programs(line) == expected


def test_what_only_runtime_knows_is_said_unchecked() -> None:
    assert "command substitution" in read_line("$(which python) -m pytest", {}).unchecked
    assert "`case`" in read_line("case $X in a|b) make;; esac", {}).unchecked
    assert "does not parse" in read_line("echo 'unbalanced", {}).unchecked
    assert read_line("pytest -q", {}).unchecked == ""


def test_python_module_of_a_call() -> None:
    def module(line: str) -> str | None:
        return python_module(read_line(line, {}).invocations[0])

    assert module("python -m pytest -q") == "pytest"
    assert module("/usr/bin/python3.12 -u -mpytest") == "pytest"
    assert module("python script.py -m x") is None
    assert module("pytest -m slow") is None


def test_locate_finds_programs_as_sh_does(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("")
    env = {"PATH": str(tmp_path)}
    assert locate("tool", env, None) == (str(tool), "")
    assert locate("claude", env, None) == (None, "`claude` is not on PATH")
    assert locate(str(plain), env, None)[1] == f"{plain} is not executable"
    modes = {"scripts/test.sh": "100755", "scripts/data.txt": "100644"}
    assert locate("./scripts/test.sh", env, modes.get)[0] == "./scripts/test.sh"
    assert "not executable (mode 100644)" in locate("scripts/data.txt", env, modes.get)[1]
    assert "not in the base branch" in locate("./missing.sh", env, modes.get)[1]


def test_importable_asks_that_python(tmp_path: Path) -> None:
    (tmp_path / "localpkg.py").write_text("")
    assert importable(sys.executable, "json", tmp_path) is True
    assert importable(sys.executable, "localpkg", tmp_path) is True  # python -m puts the folder on sys.path
    assert importable(sys.executable, "no_such_module_for_interlock", tmp_path) is False
    assert importable(str(tmp_path / "no-python"), "json", tmp_path) is None
    assert os.path.exists(sys.executable)
