"""A run remembers how it was started: every command that continues it uses the same agents (SPEC J1).

Each test runs the real ``interlock`` command as separate processes on a real repository; the agents are
the scripted agent with a ``MARK`` that it writes for each mission, so a test knows which agent did what,
and that the demo agent (which writes no mark) never did anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.engine.graph.validate import parse_graph
from app.local.config import WAYS_TO_NAME_AN_AGENT, ConfigError, LocalConfig, missing_agent_problem, parse_config
from app.local.launch import make_launch
from app.local.missions import now
from app.store.gitstore import GitStore
from tests.helpers import ROOT, edge, graph, node
from tests.local.harness import AGENT, make_repo

A, B = f"MARK=a {AGENT}", f"MARK=b {AGENT}"
GRAPH = graph(
    [node("plan", "planning", humanGate=True), node("build"), node("fix", "review")],
    [
        edge("plan", "PASS", "build"),
        edge("build", "PASS", "__end__"),
        edge("build", "FAIL", "fix"),
        edge("fix", "PASS", "__end__"),
    ],
    entry="plan",
)
SCRIPT = {
    "plan": {"answer": "the plan"},
    "build:1:deliver": {"answer": "Which file?\nVERDICT: NEEDS_INPUT"},
    "build:1:amend": {"answer": "it broke", "exit": 1},
    "fix": {"answer": "cannot fix", "exit": 1},
}


class Bench:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.repo = tmp / "repo"
        make_repo(self.repo)
        self.graph = tmp / "graph.json"
        self.graph.write_text(json.dumps(GRAPH))
        (tmp / "script.json").write_text(json.dumps(SCRIPT))
        self.env = {
            **os.environ,
            "SCRIPT": str(tmp / "script.json"),
            "LOG": str(tmp / "log"),
            "PYTHONPATH": str(ROOT),
            "COLUMNS": "400",
        }

    def interlock(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "app", *args, "--repo", str(self.repo)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert "Traceback" not in result.stderr + result.stdout, result.stderr
        return result

    def json(self, *args: str) -> dict[str, Any]:
        result = self.interlock(*args, "--json")
        assert result.returncode == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data

    def start(self, *args: str) -> dict[str, Any]:
        return self.json("run", str(self.graph), "--request", "Build it", "--run-id", "r1", *args)

    def marks(self) -> list[str]:
        marks = self.tmp / "log" / "marks.txt"
        return marks.read_text().split("\n")[:-1] if marks.exists() else []

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.repo, capture_output=True, text=True).stdout


def test_every_continuing_command_drives_the_run_with_the_agent_it_was_started_with(tmp_path: Path) -> None:
    # SPEC J1, H1, H3, V6, J3, E3: approve, amend, answer, resume, route and deliver never fall back to the demo
    bench = Bench(tmp_path)
    assert bench.start("--agent", A)["status"] == "gate_wait"
    assert bench.json("amend", "r1", "--note", "smaller")["status"] == "gate_wait"
    assert bench.json("approve", "r1")["status"] == "awaiting_input"
    assert bench.json("answer", "r1", "--text", "src/x.py")["status"] == "failed"
    assert bench.json("resume", "r1")["status"] == "awaiting_input"
    assert bench.json("route", "r1", "FAIL")["status"] == "failed"
    delivered = bench.json("deliver", "r1")
    assert delivered["status"] == "awaiting_merge" and delivered["relaunches"] == []
    assert bench.marks() == ["1 a", "2 a", "3 a", "4 a", "5 a", "6 a"]
    journey = [row for row in bench.json("journey", "r1") if row["kind"] != "decision"]  # its missions
    assert [(m["stage"], m["kind"], m["agent"]) for m in journey] == [
        ("plan", "deliver", A),
        ("plan", "amend", A),
        ("build", "deliver", A),
        ("build", "amend", A),
        ("build", "deliver", A),
        ("fix", "deliver", A),
    ]
    launch = delivered["launch"]
    assert (launch["command"], launch["agents"], launch["gates"]) == ("run", {"default": A, "decide": A}, None)
    assert launch["settings"]["agent"] == A and launch["config_file"] is None


def test_an_override_on_resume_is_used_recorded_and_stays_in_force(tmp_path: Path) -> None:
    # SPEC J1: `resume --agent B` drives the run with B, from then on; the record and the reports say so
    bench = Bench(tmp_path)
    bench.start("--agent", A)
    resumed = bench.json("resume", "r1", "--agent", B)
    assert resumed["status"] == "gate_wait" and resumed["launch"]["agents"]["default"] == A
    [override] = resumed["relaunches"]
    assert (override["command"], override["changed"], override["agents"]["default"]) == ("resume", ["agent"], B)
    assert bench.json("approve", "r1")["status"] == "awaiting_input"
    assert bench.marks() == ["1 a", "2 b", "3 b"]
    assert [m["agent"] for m in bench.json("journey", "r1")] == [A, B, B]
    recorded = bench.json("status", "r1")
    assert recorded["launch"]["agents"]["default"] == A and recorded["relaunches"] == resumed["relaunches"]
    status = bench.interlock("status", "r1").stdout
    assert f"agents   default {B}\n" in status and "set by `resume` (agent)" in status


def test_an_override_refused_by_the_checks_is_neither_announced_nor_recorded(tmp_path: Path) -> None:
    # SPEC J1: a continuing command whose --agent cannot run leaves the run as it was, and says only that
    bench = Bench(tmp_path)
    bench.start("--agent", A)
    refused = bench.interlock("approve", "r1", "--agent", "no-such-agent-program")
    assert refused.returncode == 2
    assert "cannot go on; it was left as it was" in refused.stderr
    assert "overrides" not in refused.stderr
    recorded = bench.json("status", "r1")
    assert recorded["status"] == "gate_wait" and recorded["relaunches"] == []


def test_gates_overridden_on_approve_make_the_rest_of_the_run_autopilot(tmp_path: Path) -> None:
    # SPEC H4, J1: --gates approve on a continuing command is recorded and passes the next gates
    bench = Bench(tmp_path)
    bench.start("--agent", A, "--gates", "stop")
    amended = bench.json("amend", "r1", "--note", "again", "--gates", "approve")
    assert amended["status"] == "awaiting_input" and amended["autopilot"] is True
    assert amended["relaunches"][0]["changed"] == ["gates"] and amended["relaunches"][0]["gates"] == "approve"
    assert bench.marks() == ["1 a", "2 a", "3 a"]


def test_a_changed_or_deleted_config_file_is_noticed_and_the_recorded_one_used(tmp_path: Path) -> None:
    # SPEC J1: the configuration's content is in the record, with the sha256 of the file it came from
    bench = Bench(tmp_path)
    config = tmp_path / "interlock.yml"
    config.write_text(f"agent: '{A}'\ngates: stop\n")
    started = bench.start("--config", str(config), "--policy", "max_calls=20")
    assert started["launch"]["config_file"] == str(config.resolve())
    assert started["launch"]["config_sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    config.write_text(f"agent: '{B}'\ngates: stop\ntimeout_s: 99\npolicy: {{maxCalls: 1}}\n")
    approved = bench.interlock("approve", "r1")
    assert approved.returncode == 0, approved.stderr
    assert f"configuration file {config.resolve()} has changed" in approved.stderr
    assert f"give --config {config.resolve()}" in approved.stderr and bench.marks() == ["1 a", "2 a"]
    answered = bench.json("answer", "r1", "--text", "x.py", "--config", str(config))
    [override] = answered["relaunches"]
    assert (override["changed"], override["agents"]["default"]) == (["config"], B)
    assert override["settings"]["timeout_s"] == 99 and override["settings"]["policy"]["maxCalls"] == 20
    assert override["config_sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    assert bench.marks() == ["1 a", "2 a", "3 b"]
    config.unlink()
    resumed = bench.interlock("resume", "r1", "--json")
    assert resumed.returncode == 0 and f"{config.resolve()} is gone" in resumed.stderr
    assert bench.marks()[-1] == "4 b"


def test_run_without_an_agent_refuses_and_creates_nothing(tmp_path: Path) -> None:
    # SPEC J1: no agent named anywhere is refused before a branch or a journal entry exists
    bench = Bench(tmp_path)
    heads = bench.git("for-each-ref")
    config = tmp_path / "team.yml"
    config.write_text(f"team:\n  roles:\n    - {{name: lead, capabilities: [planning], agent: '{A}'}}\n")
    for extra in ([], ["--config", str(config)]):
        refused = bench.interlock("run", str(bench.graph), "--request", "Build it", *extra)
        assert refused.returncode == 2, refused.stderr
        assert "the run cannot start; nothing was created" in refused.stderr
        assert "no agent does the steps of capability" in refused.stderr
        assert all(way in refused.stderr for way in ("--agent SPEC", "agent: SPEC", "team: roles: agent:"))
    assert "capability coding, review\n" in refused.stderr  # planning has its role's agent
    assert bench.git("for-each-ref") == heads and "interlock" not in heads
    assert not (bench.repo / ".git" / "interlock" / "worktrees").exists() and bench.marks() == []
    demo = bench.start("--agent", "demo")
    assert demo["status"] == "gate_wait" and demo["launch"]["agents"]["default"] == "demo"


def test_a_run_that_recorded_no_launch_needs_its_agent_named_once(tmp_path: Path) -> None:
    # a run started before launches were recorded: refused without an agent, then the override is its launch
    bench = Bench(tmp_path)
    bench.start("--agent", A)
    store = GitStore(bench.repo)
    run = store.load("r1")
    store.save(run.but(launch=None, version=run.version + 1), run.version)
    refused = bench.interlock("approve", "r1")
    assert refused.returncode == 2 and "run r1 cannot go on (it was started before Interlock recorded" in refused.stderr
    assert "--agent SPEC" in refused.stderr and store.load("r1").status.value == "gate_wait"
    approved = bench.json("approve", "r1", "--agent", B)
    assert approved["status"] == "awaiting_input" and approved["relaunches"][0]["agents"]["default"] == B
    assert bench.marks() == ["1 a", "2 b"]


def test_a_run_stops_nowhere_for_want_of_an_agent_it_was_not_told_about() -> None:
    # the check behind the refusal: roles, the default, decide nodes, check nodes (which need no agent)
    decide = parse_graph(
        graph(
            [node("triage", "triage", decide=True), node("test", "testing", check="true")],
            [edge("triage", "BUG", "test"), edge("triage", "OTHER", "__end__"), edge("test", "PASS", "__end__")],
            entry="triage",
        )
    )
    roles = parse_config(b"team:\n  roles:\n    - {name: t, capabilities: [triage], agent: ./t.sh}\n", Path("c"))
    assert missing_agent_problem(roles, decide) == (
        f"no agent makes the decisions of triage (`decide:` or the default agent); {WAYS_TO_NAME_AN_AGENT}"
    )
    assert missing_agent_problem(roles.model_copy(update={"decide": "./d.sh"}), decide) is None
    assert missing_agent_problem(LocalConfig(agent="./a.sh"), decide) is None
    assert "capability triage" in (missing_agent_problem(LocalConfig(decide="./d.sh"), decide) or "")


def test_the_launch_names_the_agent_of_each_kind_of_work() -> None:
    # a role without its own agent uses the default; decide falls back to the default; the advisor does not
    config = parse_config(
        b"agent: ./a.sh\nadvisor: ./adv.sh\nteam:\n  roles:\n"
        b"    - {name: dev, capabilities: [coding], agent: codex}\n    - {name: lead, capabilities: [review]}\n",
        Path("c"),
    )
    launch = make_launch(config, None, ("/x/c.yml", "ab12"), "run", now())
    assert launch.agents == {
        "default": "./a.sh",
        "decide": "./a.sh",
        "advisor": "./adv.sh",
        "role:dev": "codex",
        "role:lead": "./a.sh",
    }
    assert LocalConfig.model_validate(launch.settings) == config  # what a continuing command rebuilds


def test_a_configuration_carrying_a_secret_is_not_recorded() -> None:
    # nothing stored carries a secret: a key written into an agent's command line is refused, not journaled
    config = LocalConfig(agent="OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123 ./agent.sh")
    with pytest.raises(ConfigError, match="carries a secret"):
        make_launch(config, None, (None, None), "run", now())
    assert make_launch(LocalConfig(agent="./agent.sh"), None, (None, None), "run", now()).agents == {
        "default": "./agent.sh",
        "decide": "./agent.sh",
    }
