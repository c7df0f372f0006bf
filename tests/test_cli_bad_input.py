"""Hostile input to the ``interlock`` command (issue 11, item 10): each used to end in exit 70, an internal
error, or to hang. Each is now reported in one line naming the input, exit 2 (1 for an invalid graph), and a
refused ``run`` creates nothing: no branch, no journal, no worktree."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli import main
from app.engine.record import Status
from app.store.gitstore import GitStore
from tests.helpers import GRAPHS, ROOT
from tests.local.harness import AGENT, make_repo
from tests.secret_shapes import ONE_OF_EACH, core

GATED = GRAPHS / "basics" / "quote-edit.json"
DEEP_YAML = "[" * 5000 + "]" * 5000
LONG_NUMBER = "9" * 5000  # Python's int() refuses more than 4,300 digits


def interlock(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "app", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"},
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    return result


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_repo(tmp_path / "repo")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"edit": {"answer": "edited", "write": {"quote.txt": "Be kind."}}}))
    monkeypatch.setenv("SCRIPT", str(script))
    monkeypatch.setenv("LOG", str(tmp_path / "log"))
    return tmp_path / "repo"


def run_in(repo: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return interlock("run", *args, "--agent", AGENT, "--repo", repo, "--gates", "approve")


def assert_nothing_created(repo: Path) -> None:
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/heads/interlock"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert refs == "", refs  # no run branch, no journal (refs/heads/interlock/state)
    assert not (repo / ".git" / "interlock" / "worktrees").exists() or not any(
        (repo / ".git" / "interlock" / "worktrees").iterdir()
    )


def one_error_line(stderr: str, *fragments: str) -> None:
    lines = [line for line in stderr.splitlines() if line.startswith("error")]
    assert len(lines) == 1, stderr
    assert all(fragment in lines[0] for fragment in fragments), stderr


def graph_text(**replace: str) -> str:
    text = GATED.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


def test_a_number_of_5000_digits_is_a_schema_error_and_the_folder_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "graphs"
    folder.mkdir()
    (folder / "a-long.json").write_text(graph_text(**{'"maxVisits": 2': f'"maxVisits": {LONG_NUMBER}'}))
    (folder / "b-good.json").write_text(graph_text())
    result = interlock("validate", "--json", folder)
    assert result.returncode == 1, result.stderr
    files = {Path(f["path"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["b-good.json"]["valid"] is True  # the rest of the folder is still validated
    [error] = files["a-long.json"]["errors"]
    assert error["code"] == "schema" and "a number has more than 4,300 digits" in error["message"]


def test_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "graph.json"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        result = interlock("validate", path, GATED, timeout=20)  # used to hang, or read until MemoryError
        assert result.returncode == 2
        one_error_line(result.stderr, str(path), "not a regular file")
        assert f"{GATED}: valid" in result.stdout


@pytest.mark.parametrize("bad", ["\\u0000", "\\ud800", "\\u001b", "\\u0085"])
def test_names_no_shell_can_carry_are_refused_before_a_run(repo: Path, tmp_path: Path, bad: str) -> None:
    # SPEC G3: refused by the validator with the stable code `schema`, so `run` never starts
    graph = tmp_path / "graph.json"
    graph.write_text(graph_text(**{'"edit"': f'"ed{bad}it"'}))
    checked = interlock("validate", "--json", graph)
    assert checked.returncode == 1
    errors = json.loads(checked.stdout)["files"][0]["errors"]
    assert errors and all(e["code"] == "schema" and "names must be printable" in e["message"] for e in errors)
    assert "valid" in interlock("validate", graph).stdout  # the text report prints the name escaped
    result = run_in(repo, graph, "--request", "x")
    assert result.returncode == 1 and "names must be printable" in result.stderr
    assert_nothing_created(repo)


def test_nul_in_a_description_is_refused_but_a_newline_is_not(tmp_path: Path) -> None:
    nul, newline = tmp_path / "nul.json", tmp_path / "newline.json"
    nul.write_text(graph_text(**{"The smallest graph": "The\\u0000smallest"}))
    newline.write_text(graph_text(**{"The smallest graph": "The\\nsmallest"}))
    result = interlock("validate", nul, newline)
    assert result.returncode == 1
    assert f"{newline}: valid" in result.stdout and "without NUL" in result.stdout


@pytest.mark.parametrize("run_id", ["a..b", "x.lock", "a b", "a~1", "a@{b", ".a", "a/", "", "é\x1b"])
def test_run_ids_git_cannot_name_are_refused(repo: Path, run_id: str) -> None:
    result = run_in(repo, GATED, "--request", "x", "--run-id", run_id)
    assert result.returncode == 2
    one_error_line(result.stderr, "--run-id", "git")
    assert_nothing_created(repo)


def test_a_run_id_git_accepts_still_runs(repo: Path) -> None:
    result = run_in(repo, GATED, "--request", "x", "--run-id", "team/quote-1", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["id"] == "team/quote-1"


def test_an_argument_that_is_not_utf8_is_refused_before_any_command(repo: Path) -> None:
    # Python reads such bytes as lone surrogates, which a journal cannot hold: the run failed half-way
    args = [b"run", bytes(GATED), b"--request", b"fix \xff", b"--agent", AGENT.encode(), b"--repo", bytes(repo)]
    result = subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2
    assert result.stderr.decode() == "error: argument 4 (fix \\udcff) is not UTF-8 text: give every argument in UTF-8\n"
    assert_nothing_created(repo)


@pytest.mark.parametrize("content", [None, b"\xff\xfe title", "fifo"])
def test_an_unreadable_request_file_is_refused(repo: Path, tmp_path: Path, content: bytes | str | None) -> None:
    request = tmp_path / "request.md"
    if content == "fifo":
        os.mkfifo(request)
    elif isinstance(content, bytes):
        request.write_bytes(content)
    result = run_in(repo, GATED, "--request-file", request)
    assert result.returncode == 2
    one_error_line(result.stderr, "--request-file", str(request))
    assert_nothing_created(repo)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "No such file"),
        (b"agent: \xff\n", "not UTF-8"),
        (DEEP_YAML.encode(), "nested too deeply"),
        (f"policy: {{maxCalls: {LONG_NUMBER}}}".encode(), "more than 4,300 digits"),
    ],
)
def test_an_unreadable_config_is_refused(repo: Path, tmp_path: Path, content: bytes | None, reason: str) -> None:
    config = tmp_path / "local.yml"
    if content is not None:
        config.write_bytes(content)
    result = run_in(repo, GATED, "--request", "x", "--config", config)
    assert result.returncode == 2
    assert f"config {config}" in result.stderr and reason in result.stderr
    assert_nothing_created(repo)


@pytest.mark.parametrize(
    ("content", "reason"), [(DEEP_YAML, "nested too deeply"), ("roles: []\nx: " + LONG_NUMBER, "digits")]
)
def test_an_unreadable_team_is_refused(tmp_path: Path, content: str, reason: str) -> None:
    team = tmp_path / "team.yml"
    team.write_text(content)
    result = interlock("validate", "--team", team, GATED)
    assert result.returncode == 2
    one_error_line(result.stderr, str(team), reason)


@pytest.mark.parametrize("visits", ["edit=²", "edit=٣", f"edit={LONG_NUMBER}"])
def test_draw_refuses_visit_counts_that_are_no_number(visits: str) -> None:
    result = interlock("draw", GATED, "--visits", visits)
    assert result.returncode == 2
    one_error_line(result.stderr, "--visits")


def graphs_with_any_stage_name() -> st.SearchStrategy[bytes]:
    """The gated graph with its stage renamed to any text, written as JSON escapes (surrogates included)."""
    chars = st.characters(categories=["Cs"]) | st.characters(categories=["Cc"]) | st.characters()
    return st.text(chars, max_size=12).map(lambda name: graph_text(**{'"edit"': json.dumps(name)}).encode())


def graphs_with_long_numbers() -> st.SearchStrategy[bytes]:
    digits = st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n)
    return digits.map(lambda number: graph_text(**{'"maxVisits": 2': f'"maxVisits": {number}'}).encode())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.binary(max_size=400)
    | st.text(max_size=200).map(lambda text: text.encode("utf-8", "surrogatepass"))
    | graphs_with_any_stage_name()
    | graphs_with_long_numbers()
)
def test_any_bytes_as_a_graph_exit_0_1_or_2_never_70(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    graph = tmp_path / "any.json"
    graph.write_bytes(content)
    monkeypatch.delenv("INTERLOCK_DEBUG", raising=False)
    for command in (["validate", str(graph)], ["validate", "--json", str(graph)], ["draw", str(graph)]):
        out, err = io.BytesIO(), io.BytesIO()  # strict UTF-8, as a terminal's stream: printing must not fail
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8", errors="strict"))
        monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="utf-8", errors="strict"))
        monkeypatch.setattr(sys, "argv", ["interlock", *command])
        with pytest.raises(SystemExit) as ended:
            main()
        sys.stderr.flush()
        assert ended.value.code in (0, 1, 2), err.getvalue()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secrets=ONE_OF_EACH)
def test_an_argument_the_command_line_refuses_is_masked_in_the_error(
    monkeypatch: pytest.MonkeyPatch, secrets: dict[str, str]
) -> None:
    # SPEC GH9 (issue 11, item 4): click's own usage error quotes an argument it could not place (one that
    # starts with "-", as a key block does); what it prints goes through the one redactor too
    monkeypatch.delenv("INTERLOCK_DEBUG", raising=False)
    for secret in secrets.values():
        refused = secret if secret.startswith("-") else f"--{secret}"  # where an option was expected
        for command in (["route", "run-1", refused], ["status", refused], [refused]):
            err = io.StringIO()
            monkeypatch.setattr(sys, "stderr", err)
            monkeypatch.setattr(sys, "argv", ["interlock", *command])
            with pytest.raises(SystemExit) as ended:
                main()
            assert ended.value.code == 2, err.getvalue()
            assert "No such option" in err.getvalue() or "no such option" in err.getvalue().lower(), err.getvalue()
            assert core(secret) not in err.getvalue(), err.getvalue()


@pytest.mark.parametrize("stored", [b"[" * 100_000 + b"]" * 100_000, b"garbage", b"\xff\xfe"])
@pytest.mark.parametrize("command", ["approve", "resume", "abandon"])
def test_a_stored_graph_that_cannot_be_read_is_reported_not_exit_70(repo: Path, stored: bytes, command: str) -> None:
    # issue 11, 10: the journal is a branch anyone with the repository can rewrite; a run's stored graph that is no
    # JSON (or nested too deeply) ended every continuing command with an internal error
    ran = interlock(
        "run", GATED, "--request", "x", "--agent", AGENT, "--repo", repo, "--gates", "stop", "--run-id", "g"
    )
    assert ran.returncode == 0, ran.stderr
    store = GitStore(repo)
    run = store.load("g")
    store.save(run, run.version, {"runs/g/graph.json": stored}, message="a graph no one can read")
    refused = interlock(command, "g", "--repo", repo)
    assert refused.returncode == 2, refused.stderr
    one_error_line(refused.stderr, "stored graph of run g", "runs/g/graph.json")
    assert GitStore(repo).load("g").status is Status.GATE_WAIT  # nothing changed
