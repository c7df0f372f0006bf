"""Problems are found before the first call is charged (issue 10): `interlock run` checks everything a run
needs before it creates anything and reports every problem at once with its fix; the continuing commands
check the agents first; `interlock doctor` checks the same on demand. Real repositories, real subprocesses,
and a PATH made for each test (with or without a fake `claude`)."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from app.engine.findings import Severity
from app.local.preflight import git_findings
from tests.helpers import ROOT
from tests.local.harness import AGENT, make_repo
from tests.test_cli_runs import interlock

GATED = str(ROOT / "graphs" / "basics" / "quote-edit.json")
FAKE_CLAUDE = """#!/bin/sh
cat > /dev/null
echo "$*" >> "$CLAUDE_LOG"
echo "Be kind." > quote.txt
echo '{"type": "result", "result": "Edited the quote.", "session_id": "s-1", "total_cost_usd": 0.01}'
"""


def toolbox(tmp_path: Path, name: str, claude: bool = False) -> str:
    """A PATH holding only python, git and sh, and `claude` when asked: what the run may find is known."""
    folder = tmp_path / name
    folder.mkdir()
    for tool in ("python", "git", "sh"):
        (folder / tool).symlink_to(sys.executable if tool == "python" else shutil.which(tool) or f"/bin/{tool}")
    if claude:
        (folder / "claude").write_text(FAKE_CLAUDE)
        (folder / "claude").chmod(0o755)
    return str(folder)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends: nothing listens there


def nothing_created(repo: Path, tmp_path: Path) -> None:
    refs = git.Repo(repo).git.for_each_ref("--format=%(refname)")
    assert "interlock/" not in refs, refs  # no run branch, no journal (refs/heads/interlock/state)
    assert not (repo / ".git" / "interlock" / "worktrees").exists()
    assert not (tmp_path / "claude.log").exists()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(tmp_path / "repo")
    return tmp_path / "repo"


def test_run_refuses_with_every_problem_and_its_fix_and_creates_nothing(repo: Path, tmp_path: Path) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text(
        json.dumps(
            {
                "name": "checked",
                "entry": "build",
                "nodes": [
                    {"stage": "build", "capability": "coding"},
                    {"stage": "test", "capability": "testing", "check": "${INTERLOCK_TEST_COMMAND:-python -m pytest}"},
                    {"stage": "review", "capability": "review", "decide": True},
                ],
                "edges": [
                    {"from": "build", "verdict": "PASS", "to": "test"},
                    {"from": "test", "verdict": "PASS", "to": "review"},
                    {"from": "test", "verdict": "FAIL", "to": "build"},
                    {"from": "review", "verdict": "PASS", "to": "__end__"},
                    {"from": "review", "verdict": "FAIL", "to": "build"},
                ],
            }
        )
    )
    config = tmp_path / "config.yml"
    port = closed_port()
    config.write_text(f"agent: claude\ndecide: 'openai:llama3@http://127.0.0.1:{port}/v1'\nadvisor: anthropic:haiku\n")
    env = {
        "PATH": toolbox(tmp_path, "bin"),
        "ANTHROPIC_API_KEY": "",
        "INTERLOCK_TEST_COMMAND": "python -m no_such_module_for_interlock",
        "CLAUDE_LOG": str(tmp_path / "claude.log"),
    }
    result = interlock(
        "run", str(graph), "--request", "x", "--repo", str(repo), "--config", str(config), "--base", "trunk", env=env
    )
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert err.startswith("error: the run cannot start; nothing was created and nothing charged:")
    expected = [
        ("base branch 'trunk' does not exist", "fix: create it with `git branch trunk`"),
        ("agent claude (stages build, review): `claude` is not on PATH", "fix: install Claude Code"),
        (f"cannot reach http://127.0.0.1:{port}/v1: connection refused", "fix: start the server"),
        ("agent anthropic:haiku (advisor): ANTHROPIC_API_KEY is not set", "fix: export ANTHROPIC_API_KEY"),
        ("cannot import `no_such_module_for_interlock`", "or set INTERLOCK_TEST_COMMAND"),
    ]
    lines = err.splitlines()
    for problem, fix in expected:
        where = next((i for i, line in enumerate(lines) if problem in line), None)
        assert where is not None, (problem, err)
        assert fix in lines[where + 1], (fix, lines[where + 1])
    nothing_created(repo, tmp_path)


def test_a_config_with_wrong_keys_is_reported_with_the_rest(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yml"
    config.write_text("agnet: claude\nagent: claude\npolicy: {maxCalls: 0}\n")
    env = {"PATH": toolbox(tmp_path, "bin")}
    result = interlock("run", GATED, "--request", "x", "--repo", str(repo), "--config", str(config), env=env)
    assert result.returncode == 2
    assert "unknown key `agnet`" in result.stderr and "did you mean `agent`?" in result.stderr
    assert "`policy.maxCalls`: Input should be greater than or equal to 1" in result.stderr
    assert "`claude` is not on PATH" in result.stderr  # the agent the broken file names is still checked
    nothing_created(repo, tmp_path)


def test_with_claude_on_path_the_run_starts_and_calls_it(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "claude.log"
    args = ["run", GATED, "--request", "Edit the quote", "--agent", "claude", "--repo", str(repo), "--json"]
    refused = interlock(*args, env={"PATH": toolbox(tmp_path, "bin"), "CLAUDE_LOG": str(log)})
    assert refused.returncode == 2 and "`claude` is not on PATH" in refused.stderr
    nothing_created(repo, tmp_path)
    started = interlock(*args, env={"PATH": toolbox(tmp_path, "bin-claude", claude=True), "CLAUDE_LOG": str(log)})
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["status"] == "gate_wait"
    assert log.read_text().startswith("-p --output-format stream-json --verbose")


def test_continuing_commands_check_the_agents_before_driving_the_run(repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"edit": {"answer": "edited", "write": {"quote.txt": "Be kind."}}}))
    env: dict[str, Any] = {"SCRIPT": str(script), "LOG": str(tmp_path / "log"), "PATH": toolbox(tmp_path, "bin")}
    args = ("--repo", str(repo), "--json")
    started = interlock("run", GATED, "--request", "x", "--agent", AGENT, "--run-id", "q1", *args, env=env)
    assert json.loads(started.stdout)["status"] == "gate_wait", started.stderr
    before = git.Repo(repo).git.rev_parse("interlock/state")
    amend = interlock("amend", "q1", "--note", "shorter", "--agent", "claude", *args, env=env)
    assert amend.returncode == 2 and "run q1 cannot go on" in amend.stderr
    assert "agent claude (stage edit): `claude` is not on PATH" in amend.stderr
    assert git.Repo(repo).git.rev_parse("interlock/state") == before  # nothing applied, nothing charged
    abandoned = interlock("abandon", "q1", "--agent", "claude", *args, env=env)  # calls no agent: not checked
    assert json.loads(abandoned.stdout)["status"] == "cancelled", abandoned.stderr


def test_doctor_checks_locally_and_exits_1_on_errors(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yml"
    config.write_text("agent: demo\nteam:\n  roles:\n    - {name: dev, capabilities: [coding], agent: claude}\n")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"name": "b", "entry": "nowhere", "nodes": [], "edges": []}))
    checked = tmp_path / "checked.json"
    checked.write_text(
        json.dumps(
            {
                "name": "c",
                "entry": "t",
                "nodes": [{"stage": "t", "capability": "testing", "check": "lint_for_interlock --all"}],
                "edges": [],
            }
        )
    )
    graphs = ("--graph", str(broken), "--graph", str(checked))
    args = ("doctor", "--repo", str(repo), "--config", str(config), *graphs, "--json")
    env = {"PATH": toolbox(tmp_path, "bin"), "INTERLOCK_TEST_COMMAND": "tests_for_interlock"}
    result = interlock(*args, env=env)
    assert result.returncode == 1, result.stderr
    found = {(item["code"], item["subject"]): item for item in json.loads(result.stdout)["findings"]}
    assert found[("agent-program", "agent claude (role dev)")]["severity"] == "error"
    assert found[("agent-program", "agent demo (default agent)")]["severity"] == "ok"
    assert (
        found[("graph", str(broken))]["severity"] == "error"
        and "entry-unknown" in found[("graph", str(broken))]["message"]
    )
    assert found[("base-branch", "base branch develop")]["severity"] == "ok"
    assert found[("git-version", "git")]["severity"] == "ok"
    assert found[("check-program", "check `lint_for_interlock --all` (checked: t)")]["severity"] == "error"
    library_check = next(item for (code, _), item in found.items() if "INTERLOCK_TEST_COMMAND" in item["subject"])
    assert library_check["severity"] == "warning"  # the library's graphs matter only if they are run
    assert library_check["message"] == "`tests_for_interlock` is not on PATH"
    library = [item for (code, _), item in found.items() if code == "graph" and item["subject"].startswith("graphs/")]
    assert len(library) >= 6 and all(item["severity"] == "ok" for item in library)
    fixed = tmp_path / "fixed.yml"
    fixed.write_text("agent: demo\n")
    healthy = interlock("doctor", "--repo", str(repo), "--config", str(fixed), env={"PATH": toolbox(tmp_path, "ok")})
    assert healthy.returncode == 0, healthy.stdout
    assert healthy.stdout.splitlines()[-1].startswith("0 error(s)")


def test_doctor_says_when_no_agent_is_named_as_run_would_refuse(repo: Path, tmp_path: Path) -> None:
    # SPEC J1: `run` refuses a graph whose steps have no agent; doctor, checking what a run needs, says so
    env = {"PATH": toolbox(tmp_path, "bin")}
    bare = interlock("doctor", "--repo", str(repo), "--json", env=env)
    found = {item["code"]: item for item in json.loads(bare.stdout)["findings"] if item["code"] == "agent-spec"}
    assert bare.returncode == 0 and found["agent-spec"]["severity"] == "warning"
    assert "--agent SPEC" in found["agent-spec"]["fix"]
    text = interlock("doctor", "--repo", str(repo), "--graph", GATED, env=env)
    assert text.returncode == 1
    assert "error   agent-spec       agent: no agent does the steps of capability coding" in text.stdout
    assert f"\n{'':29}agent: SPEC " in text.stdout  # the fix's lines stay in its column
    named = interlock("doctor", "--repo", str(repo), "--agent", "demo", "--graph", GATED, "--json", env=env)
    assert named.returncode == 0 and "agent-spec" not in named.stdout


def test_git_version_checked_against_what_runs_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "git"
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    for version, severity, words in [
        ("2.39.5", Severity.OK, "version 2.39.5"),
        ("2.34.1", Severity.WARNING, "conflicts with the base go undetected"),
        ("2.4.0", Severity.ERROR, "no `git worktree`"),
    ]:
        fake.write_text(f"#!/bin/sh\necho 'git version {version}'\n")
        fake.chmod(0o755)
        [finding] = git_findings()
        assert (finding.severity, words in finding.message) == (severity, True), finding
        assert finding.fix == ("" if severity is Severity.OK else "install git 2.38 or newer")
    fake.unlink()
    monkeypatch.setenv("PATH", str(tmp_path))
    [missing] = git_findings()
    assert missing.is_error and "cannot be run" in missing.message
