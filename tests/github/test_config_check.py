# ruff: noqa: F811 - `fake` is the imported fixture, which pytest passes by name
"""``interlock config check`` (issue 13, item 1): the configuration with every graph of every graphset its teams
attach to, against each team's roster; every error at once, capability-uncarried warnings naming the fallback
(SPEC G4); exit codes as ``interlock validate``. Run as the console script, locally and against the stand-in of
GitHub on loopback, across two and three repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.github.fake_github import FakeGitHub
from tests.github.test_doctor import KEY, fake  # noqa: F401 - the fixture
from tests.helpers import ROOT, doc

CHECK_PAGES = ("local/doctor.md", "github/configuration.md", "github/teams.md")  # where `config check` is told

REPO = "octo/app"
SMALL = {
    "name": "small",
    "entry": "build",
    "nodes": [{"stage": "build", "capability": "coding"}, {"stage": "plan", "capability": "planning"}],
    "edges": [{"from": "build", "verdict": "PASS", "to": "plan"}, {"from": "plan", "verdict": "PASS", "to": "__end__"}],
}
TEAMS = """teams:
  core:
    roles: {dev: {capabilities: [coding]}, lead: {fullAuthority: true, capabilities: [review]}}
    defaultGraph: small
  docs:
    roles: {writer: {capabilities: [writing]}}
    graphsets: [teams/docs]
    defaultGraph: nope
"""


def check(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    variables = {**os.environ, "COLUMNS": "300", **env}
    command = [sys.executable, "-m", "app", "config", "check", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=variables, timeout=60)


def findings(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(result.stdout)["findings"]
    return found


def checkout(tmp_path: Path, config: str) -> Path:
    (tmp_path / ".github/interlock/graphs").mkdir(parents=True)
    (tmp_path / ".github/interlock.yml").write_text(config)
    (tmp_path / ".github/interlock/graphs/small.json").write_text(json.dumps(SMALL))
    (tmp_path / "teams/docs").mkdir(parents=True)
    (tmp_path / "teams/docs/bad.json").write_text(json.dumps({"name": "bad", "entry": "x", "nodes": []}))
    return tmp_path / ".github/interlock.yml"


def test_every_graph_of_every_team_is_checked_against_its_roster_at_once(tmp_path: Path) -> None:
    # SPEC G3, G4, G6
    result = check("--file", str(checkout(tmp_path, TEAMS)), "--json")
    assert result.returncode == 1, result.stderr
    said = {(f["severity"], f["subject"], f["message"]) for f in findings(result)}
    small = "team core: .github/interlock/graphs/small.json"
    uncarried = "no role of team 'core' carries capability 'planning': role 'lead' (full authority) will do it"
    assert ("warning", small, f"capability-uncarried: {uncarried}") in said
    bad = "team docs: teams/docs/bad.json"
    assert ("error", bad, "entry-unknown: entry 'x' is not a node") in said
    assert any(s == "error" and subject == bad and m.startswith("schema:") for s, subject, m in said)
    assert any(s == "error" and subject == "team docs: defaultGraph nope" for s, subject, _ in said)


def test_a_valid_configuration_exits_0_with_its_warnings(tmp_path: Path) -> None:
    path = checkout(tmp_path, TEAMS.replace("defaultGraph: nope", "defaultGraph: feature"))
    (tmp_path / "teams/docs/bad.json").unlink()
    result = check(cwd=tmp_path)  # the default: ./.github/interlock.yml
    assert result.returncode == 0, result.stdout
    assert (
        "(full authority) will do it" in result.stdout
        and f"interlock config check: {path.relative_to(tmp_path)}" in result.stdout
    )
    assert "no role of team 'docs' carries capability 'coding': no role can do it" in result.stdout  # feature's


def test_a_wrong_configuration_lists_every_problem_and_exits_1(tmp_path: Path) -> None:
    path = checkout(tmp_path, "trigger_lable: x\nteams: {core: {roles: {dev: {colour: red}}, concurrency: 0}}\n")
    result = check("--file", str(path), "--json")
    assert result.returncode == 1
    messages = [f["message"] for f in findings(result)]
    assert any(
        m.endswith("trigger_lable: Extra inputs are not permitted (did you mean `trigger_label`?)") for m in messages
    )
    assert any(m.endswith("teams.core.roles.dev.colour: Extra inputs are not permitted") for m in messages)
    assert any(m.endswith("teams.core.concurrency: Input should be greater than or equal to 1") for m in messages)


def test_a_misspelt_key_is_named_with_what_it_meant_and_the_graphs_are_still_checked(tmp_path: Path) -> None:
    # issue 28, part 7: every problem of every layer in one run, with suggestions, as the graph validator gives
    path = checkout(tmp_path, TEAMS.replace("defaultGraph: small\n", "defaultGraph: small\n    concurency: 2\n"))
    result = check("--file", str(path), "--json")
    assert result.returncode == 1, result.stdout
    said = {(f["severity"], f["subject"], f["message"]) for f in findings(result)}
    assert any(
        m.endswith("concurency: Extra inputs are not permitted (did you mean `concurrency`?)") for _, _, m in said
    )
    uncarried = "no role of team 'core' carries capability 'planning': role 'lead' (full authority) will do it"
    assert ("warning", "team core: .github/interlock/graphs/small.json", f"capability-uncarried: {uncarried}") in said
    assert ("error", "team docs: teams/docs/bad.json", "entry-unknown: entry 'x' is not a node") in said
    assert not any(m.startswith("valid:") for _, _, m in said)


def test_what_cannot_be_read_exits_2(tmp_path: Path) -> None:
    missing = check("--file", str(tmp_path / "nowhere.yml"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    both = check("--file", "x", "--repo", REPO)  # the file checked as REPO's (extends followed): unreadable still
    assert both.returncode == 2 and "cannot read x" in both.stderr


def on_github(fake: FakeGitHub, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    app = {"GITHUB_APP_ID": "12345", "GITHUB_APP_PRIVATE_KEY": KEY, "GITHUB_API_URL": fake.url}  # type: ignore[attr-defined]
    return check("--repo", REPO, "--json", *args, **{**app, **env})


def test_a_repository_on_github_is_checked_with_what_it_extends(fake: FakeGitHub) -> None:
    # three repositories: the app, the organisation's shared file, and the one that shares with
    fake.seed_branch("octo/base", "main", {".github/interlock.yml": "gatekeepers: [root]\n"})
    fake.seed_branch("octo/.github", "main", {"interlock.yml": "extends: base\n" + TEAMS})
    fake.seed_branch(
        REPO,
        "main",
        {".github/interlock.yml": "extends: .github\n", ".github/interlock/graphs/small.json": json.dumps(SMALL)},
    )
    result = on_github(fake)
    assert result.returncode == 1, result.stderr
    said = {(f["severity"], f["subject"], f["message"]) for f in findings(result)}
    assert ("ok", f".github/interlock.yml on {REPO}@main", "valid: 2 team(s): core, docs") in said
    assert any(s == "warning" and "capability-uncarried" in m and "'lead' (full authority)" in m for s, _, m in said)
    assert any(s == "error" and subject == "team docs: defaultGraph nope" for s, subject, _ in said)


def test_an_extends_the_app_cannot_read_is_an_error_on_github(fake: FakeGitHub) -> None:
    fake.seed_branch(REPO, "main", {".github/interlock.yml": "extends: octo/secret\n"})
    fake.seed_branch("octo/secret", "main", {".github/interlock.yml": "gatekeepers: [x]\n"})
    fake.unreadable.add("octo/secret")
    result = on_github(fake)
    assert result.returncode == 1
    [problem] = [f for f in findings(result) if f["severity"] == "error"]
    assert "the App cannot read octo/secret" in problem["message"]
    fake.seed_branch(REPO, "main", {".github/interlock.yml": "extends: octo/a\n"})
    fake.seed_branch("octo/a", "main", {".github/interlock.yml": f"extends: {REPO}\n"})
    cycle = on_github(fake)
    assert cycle.returncode == 1 and "a cycle of extends" in cycle.stdout


def test_the_readme_names_the_commands_this_file_runs() -> None:
    readme = doc(*CHECK_PAGES)
    block = readme.split("**Checking it**: `interlock config check`", 1)[1].split("```", 2)[1]
    assert [line.split("#")[0].split()[3:4] for line in block.splitlines()[1:]] == [[], ["--file"], ["--repo"]]
    assert (
        "exits 0 when nothing is\nwrong (warnings allowed), 1 when the configuration or a graph has an error" in readme
    )


def test_a_graph_file_that_cannot_be_read_is_an_error_saying_why(tmp_path: Path) -> None:
    path = checkout(tmp_path, TEAMS.replace("defaultGraph: nope", "defaultGraph: feature"))
    (tmp_path / "teams/docs/bad.json").unlink()
    os.mkfifo(tmp_path / "teams/docs/pipe.json")  # never read: a FIFO would hang a reader
    result = check("--file", str(path), "--json")
    assert result.returncode == 1
    [problem] = [f for f in findings(result) if f["severity"] == "error"]
    assert problem["subject"] == "team docs: teams/docs/pipe.json" and problem["message"].startswith("cannot read it:")


def test_without_credentials_or_an_installation_on_github_it_exits_2(fake: FakeGitHub) -> None:
    unset = on_github(fake, GITHUB_APP_ID="")
    assert unset.returncode == 2 and "GITHUB_APP_ID" in unset.stderr and "Traceback" not in unset.stderr
    fake.installation = None
    absent = on_github(fake)
    assert absent.returncode == 2 and f"the App is not installed on {REPO}" in absent.stderr


def test_every_team_key_is_acted_on_so_none_is_warned_as_doing_nothing(tmp_path: Path) -> None:
    # "every setting does something": each team key is acted on now (concurrency, SPEC U5, test_team_queue.py;
    # autoAccept and acceptsRequests, SPEC U4 U3, test_requests.py; satellites, SPEC U7, test_satellites.py;
    # onRunEnd, SPEC U6, test_supervision.py), so config check warns of none as "not acted on yet"
    more = "\n    concurrency: 2\n    autoAccept: true\n    acceptsRequests: true\n    satellites: [octo/docs]"
    config = TEAMS.replace("defaultGraph: small", f"defaultGraph: small{more}")
    checkout(tmp_path, config.replace("defaultGraph: nope", "defaultGraph: feature"))
    (tmp_path / "teams/docs/bad.json").unlink()
    result = check("--file", str(tmp_path / ".github/interlock.yml"), "--json")
    assert result.returncode == 0, result.stdout
    said = {(f["severity"], f["subject"]): f["message"] for f in findings(result)}
    assert not [message for message in said.values() if "not acted on" in message], said
    assert not any(subject.startswith("teams.docs.") for _, subject in said)


def test_the_readme_says_a_misspelt_key_is_named_with_what_it_meant() -> None:
    text = " ".join(doc(*CHECK_PAGES).split())
    assert (
        "`teams.core.concurency: Extra inputs are not permitted (did you mean `concurrency`?)`, and when unknown keys "
        "are all that is wrong, a checkout's graphs are still checked, against the file without them"
    ) in text


def test_on_github_every_layer_is_named_with_what_it_meant_and_the_graphs_are_still_checked(fake: FakeGitHub) -> None:
    # issue 28, part 7 (SPEC G3, G4, G6): every problem of every layer in one run, as the checkout's check gives
    fake.seed_branch("octo/base", "main", {".github/interlock.yml": "gatekeepers: [root]\ntrigger_lable: x\n"})
    shared = "extends: base\n" + TEAMS.replace("defaultGraph: small\n", "defaultGraph: small\n    concurency: 2\n")
    fake.seed_branch("octo/.github", "main", {"interlock.yml": shared})
    own = {
        ".github/interlock.yml": "extends: .github\nbsae: main\n",
        ".github/interlock/graphs/small.json": json.dumps(SMALL),
    }
    fake.seed_branch(REPO, "main", own)
    result = on_github(fake)
    assert result.returncode == 1, result.stderr
    said = {(f["severity"], f["subject"], f["message"]) for f in findings(result)}
    errors = [m for s, _, m in said if s == "error"]
    assert any(m.endswith("bsae: Extra inputs are not permitted (did you mean `base`?)") for m in errors), errors
    assert any(
        m.startswith("octo/.github:interlock.yml: ")
        and m.endswith("teams.core.concurency: Extra inputs are not permitted (did you mean `concurrency`?)")
        for m in errors
    ), errors
    assert any(
        m.startswith("octo/base:.github/interlock.yml: ")
        and m.endswith("trigger_lable: Extra inputs are not permitted (did you mean `trigger_label`?)")
        for m in errors
    ), errors
    uncarried = "no role of team 'core' carries capability 'planning': role 'lead' (full authority) will do it"
    assert ("warning", "team core: .github/interlock/graphs/small.json", f"capability-uncarried: {uncarried}") in said
    assert any(s == "error" and subject == "team docs: defaultGraph nope" for s, subject, _ in said)
    assert not any(m.startswith("valid:") for _, _, m in said)


def test_on_github_a_layer_wrong_beyond_its_keys_is_named_with_the_others(fake: FakeGitHub) -> None:
    # a layer refused for more than unknown keys: no graph is checked, but every layer's problems are named
    fake.seed_branch("octo/base", "main", {".github/interlock.yml": "permission: everyone\n"})
    fake.seed_branch(REPO, "main", {".github/interlock.yml": "extends: base\ntrigger_lable: x\n"})
    result = on_github(fake)
    assert result.returncode == 1, result.stderr
    errors = [f["message"] for f in findings(result) if f["severity"] == "error"]
    assert any("trigger_lable: Extra inputs are not permitted (did you mean `trigger_label`?)" in m for m in errors)
    assert any(m.startswith("octo/base:.github/interlock.yml: permission:") for m in errors), errors


def test_the_readme_says_every_file_of_a_chain_is_checked_in_one_run() -> None:
    text = " ".join(doc(*CHECK_PAGES).split())
    assert (
        "through `--repo`, every file of the `extends:` chain is checked the same way in one run, each problem named "
        "by the file it is in"
    ) in text
