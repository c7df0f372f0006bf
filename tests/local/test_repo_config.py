"""The repository's configuration file drives a local run (issue 13, item 8): `interlock run` reads
`.github/interlock.yml` (its own, or `--config`), with its teams, roles, graphsets, default graph and autopilot,
and the keys only a local run reads beside them. Real repositories in temporary folders, real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from tests.helpers import ROOT, doc
from tests.local.harness import AGENT, make_repo

TWO_STEPS = {
    "name": "tiny",
    "entry": "work",
    "nodes": [
        {"stage": "work", "capability": "coding", "requiresChanges": True},
        {"stage": "review", "capability": "review"},
    ],
    "edges": [
        {"from": "work", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
    ],
}
GATED = {
    "name": "gated",
    "entry": "work",
    "nodes": [{"stage": "work", "capability": "coding", "humanGate": True, "requiresChanges": True}],
    "edges": [{"from": "work", "verdict": "PASS", "to": "__end__"}],
}
TEAMS = f"""\
gatekeepers: [alice]
teams:
  core:
    roles:
      dev: {{capabilities: [coding], agent: "MARK=core-dev {AGENT}", model: small}}
      lead: {{fullAuthority: true, capabilities: [review], agent: "MARK=core-lead {AGENT}"}}
    graphsets: [graphs/core]
    defaultGraph: tiny
  docs:
    roles:
      writer: {{fullAuthority: true, capabilities: [coding], agent: "MARK=docs-writer {AGENT}"}}
    graphsets: [graphs/docs]
    defaultGraph: gated
    autopilot: true
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    make_repo(folder)
    for team, graphs in (("core", [TWO_STEPS]), ("docs", [GATED, {**TWO_STEPS, "name": "docs-tiny"}])):
        (folder / "graphs" / team).mkdir(parents=True)
        for graph in graphs:
            (folder / "graphs" / team / f"{graph['name']}.json").write_text(json.dumps(graph))
    (folder / ".github").mkdir()
    (folder / ".github" / "interlock.yml").write_text(TEAMS)
    (tmp_path / "script.json").write_text(json.dumps({"work": {"answer": "done", "write": {"w.txt": "x {mission}"}}}))
    return folder


def interlock(repo: Path, *args: str, in_repo: bool = True) -> subprocess.CompletedProcess[str]:
    tmp = repo.parent
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRIPT": str(tmp / "script.json"), "LOG": str(tmp / "log")}
    result = subprocess.run(
        [sys.executable, "-m", "app", *args, *(["--repo", str(repo)] if in_repo else [])],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


def run(repo: Path, *args: str) -> dict[str, Any]:
    result = interlock(repo, "run", *args, "--request", "Do it", "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def marks(repo: Path) -> list[str]:
    path = repo.parent / "log" / "marks.txt"
    return [line.split()[1] for line in path.read_text().splitlines()] if path.exists() else []


def nothing_created(repo: Path) -> None:
    assert "interlock/" not in git.Repo(repo).git.for_each_ref("--format=%(refname)")


def test_the_repository_file_is_read_without_config_and_its_roles_do_the_missions(repo: Path) -> None:
    # SPEC U1: each role's agent does the missions of its capability; the default graph of the first team
    result = interlock(repo, "run", "--request", "Do it", "--json")
    assert result.returncode == 0, result.stderr
    assert "configuration: " in result.stderr and ".github/interlock.yml (the repository's own" in result.stderr
    record = json.loads(result.stdout)
    assert record["graph"] == "tiny" and record["status"] == "awaiting_merge"
    assert marks(repo) == ["core-dev", "core-lead"]
    settings = record["launch"]["settings"]
    assert settings["team"]["name"] == "core" and settings["concurrency"] == 1
    assert record["launch"]["config_file"] == str((repo / ".github" / "interlock.yml").resolve())


def test_the_team_is_the_one_whose_graphset_holds_the_graph(repo: Path) -> None:
    # issue 13: the team whose graphset holds the graph, else the first team (as on GitHub)
    record = run(repo, "docs-tiny")
    assert record["launch"]["settings"]["team"]["name"] == "docs"
    assert marks(repo) == ["docs-writer", "docs-writer"]  # its full-authority role takes the uncarried review
    elsewhere = repo.parent / "elsewhere.json"
    elsewhere.write_text(json.dumps({**TWO_STEPS, "name": "elsewhere"}))
    assert run(repo, str(elsewhere))["launch"]["settings"]["team"]["name"] == "core"
    by_file = run(repo, str(repo / "graphs" / "docs" / "docs-tiny.json"))
    assert by_file["launch"]["settings"]["team"]["name"] == "docs"


def test_team_picks_the_team_and_its_graphsets_and_an_unknown_team_is_refused(repo: Path) -> None:
    record = run(repo, "--team", "docs", "--gates", "stop")  # the team's defaultGraph: gated
    assert record["graph"] == "gated" and record["launch"]["settings"]["team"]["name"] == "docs"
    missing = interlock(repo, "run", "tiny", "--team", "docs", "--request", "x")
    assert missing.returncode == 2 and "tiny" in missing.stderr  # only docs' graphsets (and the library)
    unknown = interlock(repo, "run", "tiny", "--team", "ops", "--request", "x")
    assert unknown.returncode == 2
    assert "--team ops:" in unknown.stderr and "(its teams: core, docs)" in unknown.stderr


def test_autopilot_approves_the_gates_unless_gates_says_otherwise(repo: Path) -> None:
    # SPEC H4: the team's autopilot passes its gates; --gates stop keeps them
    assert run(repo, "gated")["status"] == "awaiting_merge"
    assert run(repo, "gated", "--gates", "stop")["status"] == "gate_wait"
    file = repo / ".github" / "interlock.yml"
    file.write_text(TEAMS + "gates: stop\n")
    assert run(repo, "gated")["status"] == "gate_wait"  # the file's own `gates:` over the team's autopilot


def test_local_keys_are_allowed_beside_the_repository_keys(repo: Path) -> None:
    file = repo / ".github" / "interlock.yml"
    file.write_text(
        "agent: " + json.dumps(f"MARK=default {AGENT}") + "\ndecide: demo\ntimeout_s: 120\n"
        "context: {intact: 3}\nadvisor_timeout_s: 5\nbase: develop\nteams: {solo: {graphsets: [graphs/core]}}\n"
    )
    record = run(repo, "tiny")
    assert marks(repo) == ["default", "default"]  # a team without roles: the file's default agent
    settings = record["launch"]["settings"]
    assert settings["timeout_s"] == 120 and settings["context"]["intact"] == 3 and settings["team"]["name"] == "solo"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("teams: {core: {roles: {dev: {capabilities: [coding], colour: red}}}}\n", "teams.core.roles.dev.colour"),
        ("teams: {core: {}}\ncolour: red\n", "colour: unknown key"),
        ("teams: {core: {}}\nagnet: claude\n", "did you mean `agent`?"),
        ("teams: {core: {}}\ngates: sometimes\n", "gates: Input should be 'ask', 'approve' or 'stop'"),
        ("teams: {core: {}}\nteam: {roles: []}\n", "in the repository's format the teams are under `teams:`"),
        ("teams: {core: {concurrency: 0}}\n", "teams.core.concurrency"),
        ("extends: octo/.github\n", "extends: octo/.github: a local run does not read other repositories"),
        ("teams: {core: {}}\npermission: root\n", "permission: String should match pattern"),
    ],
)
def test_a_wrong_key_is_refused_with_its_path_and_nothing_is_created(repo: Path, text: str, said: str) -> None:
    (repo / ".github" / "interlock.yml").write_text(text)
    result = interlock(repo, "run", "tiny", "--request", "x", "--agent", AGENT)
    assert result.returncode == 2
    assert said in result.stderr and "nothing was created" in result.stderr, result.stderr
    nothing_created(repo)


def test_a_local_file_and_no_file_work_as_before(repo: Path) -> None:
    (repo / ".github" / "interlock.yml").unlink()
    result = interlock(repo, "run", "--request", "x", "--agent", AGENT)
    assert result.returncode == 2 and "give GRAPH" in result.stderr
    local = repo.parent / "local.yml"
    local.write_text("agent: " + json.dumps(f"MARK=local {AGENT}") + "\n")
    record = run(repo, str(repo / "graphs" / "core" / "tiny.json"), "--config", str(local))
    assert marks(repo) == ["local", "local"] and record["launch"]["settings"]["team"] is None
    named = interlock(repo, "run", "tiny", "--request", "x", "--config", str(local), "--team", "core")
    assert named.returncode == 2 and "--team core:" in named.stderr


def test_config_overrides_the_repository_file_and_a_continuing_command_keeps_the_runs_team(repo: Path) -> None:
    # SPEC J1: `approve --config FILE` reads the run's own team from the file as it is now
    record = run(repo, "gated", "--gates", "stop")
    assert record["status"] == "gate_wait" and marks(repo) == ["docs-writer"]
    file = repo / ".github" / "interlock.yml"
    file.write_text(TEAMS.replace("MARK=docs-writer", "MARK=docs-new"))
    amended = interlock(repo, "amend", record["id"], "--note", "again", "--config", str(file), "--gates", "stop")
    assert amended.returncode == 0, amended.stderr
    assert marks(repo) == ["docs-writer", "docs-new"]


EVERY_KEY = f"""\
trigger_label: feature-request
graph_label_prefix: "graph:"
permission: maintain
base: develop
default_graph: tiny
graphsets: [graphs/core]
workflow: interlock.yml
gatekeepers: [alice]
autopilot: false
concurrency: 2
policy: {{maxCalls: 30}}
advisor: {json.dumps(AGENT)}
prices: {{small: {{input: 0.5, output: 1.5}}}}
upstream: [octo/lib]
runners: {{default: ubuntu-latest}}
teams:
  core:
    roles:
      dev: {{capabilities: [coding], agent: "MARK=core-dev {AGENT}", model: small, tools: [Read],
             systemPrompt: "You code.", deliverables: [a summary]}}
      lead: {{fullAuthority: true, capabilities: [review], agent: "MARK=core-lead {AGENT}"}}
    gatekeepers: [bob]
    graphsets: [graphs/core]
    defaultGraph: tiny
    autoAccept: false
    autopilot: true
    concurrency: 1
    satellites: [octo/docs]
    acceptsRequests: true
    runners: {{coding: [self-hosted, linux]}}
"""


def test_a_file_that_config_check_accepts_is_one_that_interlock_run_runs(repo: Path) -> None:
    # issue 13 item 3: one file, one model: every key of the repository's format, checked then run
    file = repo / ".github" / "interlock.yml"
    file.write_text(EVERY_KEY)
    checked = interlock(repo, "config", "check", "--file", str(file), in_repo=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    make_repo(repo.parent / "docs")  # SPEC U7: the satellite octo/docs is the clone beside the repository
    record = run(repo)
    assert record["status"] == "awaiting_merge" and marks(repo) == ["core-dev", "core-lead"]
    settings = record["launch"]["settings"]
    assert settings["satellites"] == [os.path.join(os.pardir, "docs")]
    assert record["satellites"] == [str((repo.parent / "docs").resolve())]
    assert settings["gates"] == "approve" and settings["concurrency"] == 1 and settings["advisor"] == AGENT


def test_a_satellite_of_the_repository_file_missing_beside_it_starts_nothing(repo: Path) -> None:
    # SPEC U7: `owner/name` is looked for at ../name; absent, the run is refused with where it looked
    (repo / ".github" / "interlock.yml").write_text(EVERY_KEY)
    result = interlock(repo, "run", "--request", "Do it")
    assert result.returncode == 2 and f"the satellite {os.path.join(os.pardir, 'docs')}" in result.stderr
    assert "is not a git repository with a commit" in result.stderr
    assert not (repo / ".git" / "refs" / "heads" / "interlock").exists()


def test_which_format_a_file_is_read_in(repo: Path) -> None:
    # a `.github/interlock.yml` is the repository's format even without a key only it has: its graphsets apply
    (repo / ".github" / "interlock.yml").write_text("agent: " + json.dumps(f"MARK=own {AGENT}") + "\n")
    (repo / ".github" / "interlock" / "graphs").mkdir(parents=True)
    (repo / ".github" / "interlock" / "graphs" / "own.json").write_text(json.dumps({**TWO_STEPS, "name": "own"}))
    assert run(repo, "own")["graph"] == "own" and marks(repo) == ["own", "own"]
    # any file with `teams:` is too, wherever it is
    elsewhere = repo.parent / "team.yml"
    elsewhere.write_text(TEAMS)
    assert run(repo, "docs-tiny", "--config", str(elsewhere))["launch"]["settings"]["team"]["name"] == "docs"


def test_the_local_only_keys_are_refused_by_config_check_as_by_the_app(repo: Path) -> None:
    file = repo / ".github" / "interlock.yml"
    file.write_text(TEAMS + "agent: claude\n")
    checked = interlock(repo, "config", "check", "--file", str(file), in_repo=False)
    assert checked.returncode == 1 and "agent: Extra inputs are not permitted" in checked.stdout


def test_the_readme_says_how_the_repository_file_drives_local_runs() -> None:
    # every README sentence is checked: the behaviour by the tests above and in test_team_queue.py, the words here
    text = " ".join(doc("local/configuration.md").split())
    for words in (
        "Without `--config`, `interlock run` reads the repository's own `.github/interlock.yml` when its work tree",
        "A file is read in the repository's format when it is a `.github/interlock.yml` or has a key only that",
        "so a file that `interlock config check --file` accepts is one that `interlock run` runs.",
        "(the App on GitHub refuses them, as `interlock config check` does); `team:` is refused there",
        "team is `--team NAME`, else the team whose graphset holds the graph, else the first team, as on GitHub;",
        "its `autopilot` approves the gates unless `gates:` or `--gates` says otherwise;",
        "`extends:` is refused: it names a GitHub repository, which a local run does not read.",
        "A command that continues a run with `--config FILE` takes the run's own team from the file.",
        "A team with `concurrency: N` runs at most N local runs at once in a clone of the repository",
        "starts when a run of the team ends, however it ends, `kill -9` included; with `--no-wait` it refuses",
        "A place is held by the process driving a run: a run stopped at a gate holds none,",
        "The line is kept in `.git/interlock/queues/<team>/`.",
    ):
        assert words in text, words
