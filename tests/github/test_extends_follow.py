# ruff: noqa: F811 - `world` and `fake` are the imported fixtures, which pytest passes by name
"""``extends:`` followed everywhere the configuration is read (issue 13, item 1): an inherited graphset is read
from the repository that declared it, by the App, by ``interlock config check`` (``--repo``, and ``--file`` with
``--repo``) and by ``interlock doctor --github``; offline, ``--file`` says it cannot follow ``extends``."""

from __future__ import annotations

import json
from pathlib import Path

from app.github.extends import folder_home, load_config
from tests.github.fake_github import FakeGitHub
from tests.github.test_config_check import SMALL, check, findings, on_github
from tests.github.test_doctor import doctor, fake, good_files, good_repository  # noqa: F401 - fixture
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture
from tests.helpers import doc

ORG = "octo/org-config"
ORG_FILE = """graphsets: [shared/graphs]
teams:
  platform:
    roles: {dev: {capabilities: [coding]}, lead: {fullAuthority: true}}
    defaultGraph: orgflow
"""
ORGFLOW = {
    "name": "orgflow",
    "entry": "design",
    "nodes": [{"stage": "design", "capability": "coding"}],
    "edges": [{"from": "design", "verdict": "PASS", "to": "__end__"}],
}
BROKEN = {"name": "broken", "entry": "x", "nodes": []}


def organisation(fake: FakeGitHub) -> None:
    files = {
        ".github/interlock.yml": ORG_FILE,
        "shared/graphs/orgflow.json": json.dumps(ORGFLOW),
        "shared/graphs/broken.json": json.dumps(BROKEN),
    }
    fake.seed_branch(ORG, "main", files)


def test_an_inherited_graphset_is_read_from_the_repository_that_declared_it(world: World) -> None:
    # SPEC U2, G6: the org's graphset folder lives in the org's repository, not in the one that extends it
    organisation(world.fake)
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", f"extends: {ORG}\nbase: develop\n")
    _, issue = world.label()
    run = world.run(issue)
    assert (run.team, run.stage) == ("platform", "design")  # its graph, from octo/org-config:shared/graphs
    assert [d["inputs"]["run"] for d in world.fake.dispatches] == [f"issue-{issue}"]
    config = load_config(world.runs().api, REPO, "main")
    assert config.graphsets == [f"{ORG}:shared/graphs"] and folder_home(config.graphsets[0]) == (ORG, "shared/graphs")


def test_the_repositorys_own_graphsets_stay_its_own(world: World) -> None:
    organisation(world.fake)
    world.fake.commit_file(
        REPO, "main", ".github/interlock.yml", f"extends: {ORG}\ngraphsets: [.github/interlock/graphs]\n"
    )
    config = load_config(world.runs().api, REPO, "main")
    assert config.graphsets == [".github/interlock/graphs"]


def test_config_check_on_github_reads_an_inherited_graphset_where_it_was_declared(fake: FakeGitHub) -> None:
    organisation(fake)
    fake.seed_branch(REPO, "main", {".github/interlock.yml": f"extends: {ORG}\n"})
    result = on_github(fake)
    assert result.returncode == 1, result.stderr
    said = {(f["severity"], f["subject"]) for f in findings(result)}
    assert ("ok", f"team platform: {ORG}:shared/graphs/orgflow.json") in said
    assert ("error", f"team platform: {ORG}:shared/graphs/broken.json") in said


def test_config_check_of_a_file_follows_extends_with_the_repository_it_is_for(fake: FakeGitHub, tmp_path: Path) -> None:
    # a checkout's file, checked before it is pushed: what it extends is read through the App
    organisation(fake)
    fake.seed_branch(REPO, "main", {"README.md": "# app\n"})
    (tmp_path / ".github").mkdir()
    path = tmp_path / ".github/interlock.yml"
    path.write_text("extends: org-config\nteams:\n  platform: {concurrency: 2}\n")  # the owner comes from --repo
    result = on_github(fake, "--file", str(path))
    assert result.returncode == 1, result.stderr
    said = {(f["severity"], f["subject"], f["message"]) for f in findings(result)}
    assert ("ok", str(path), "valid: 1 team(s): platform") in said
    assert any(s == "error" and subject == f"team platform: {ORG}:shared/graphs/broken.json" for s, subject, _ in said)
    path.write_text("extends: octo/a\n")
    fake.seed_branch("octo/a", "main", {".github/interlock.yml": "extends: octo/b\n"})
    fake.seed_branch("octo/b", "main", {".github/interlock.yml": "extends: octo/a\n"})
    cycle = on_github(fake, "--file", str(path))
    assert cycle.returncode == 1 and "a cycle of extends" in cycle.stdout
    path.write_text("extends: octo/secret\n")
    fake.seed_branch("octo/secret", "main", {".github/interlock.yml": "base: main\n"})
    fake.unreadable.add("octo/secret")
    unreadable = on_github(fake, "--file", str(path))
    assert unreadable.returncode == 1 and "the App cannot read octo/secret" in unreadable.stdout


def test_config_check_of_a_file_offline_says_extends_cannot_be_followed(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    path = tmp_path / ".github/interlock.yml"
    path.write_text("extends: octo/org-config\n")
    result = check("--file", str(path), "--json", GITHUB_APP_ID="")
    assert result.returncode == 0, result.stderr
    [said] = [f for f in findings(result) if f["severity"] == "warning"]
    assert said["message"] == "extends: octo/org-config cannot be followed offline: only this file was checked"
    assert "--repo OWNER/NAME" in said["fix"]


def test_doctor_reads_the_configuration_with_what_it_extends(fake: FakeGitHub) -> None:
    good_repository(fake)
    organisation(fake)
    own = {**good_files(), ".github/interlock.yml": f"extends: {ORG}\nbase: develop\ndefault_graph: orgflow\n"}
    fake.seed_branch(REPO, "main", own)
    result = doctor(fake, "--github", REPO, "--json")
    found = {(item["code"], item["subject"]): item for item in json.loads(result.stdout)["findings"]}
    assert found[("repo-config", ".github/interlock.yml on main")]["message"] == f"valid, over {ORG}"
    assert found[("graph", "default_graph orgflow")]["message"] == f"from {ORG}:shared/graphs/orgflow.json"
    assert found[("graph", f"{ORG}:shared/graphs/broken.json")]["severity"] == "error"
    fake.seed_branch(REPO, "main", {**good_files(), ".github/interlock.yml": "extends: octo/nowhere\n"})
    fake.unreadable.add("octo/nowhere")
    refused = doctor(fake, "--github", REPO, "--json")
    config = {(i["code"], i["subject"]): i for i in json.loads(refused.stdout)["findings"]}
    assert "the App cannot read octo/nowhere" in config[("repo-config", ".github/interlock.yml on main")]["message"]


def test_the_readme_says_where_inherited_graphsets_are_read() -> None:
    text = " ".join(doc("local/doctor.md", "github/configuration.md").split())
    assert "The graphs of an inherited `graphsets` entry are read from the repository whose file names it" in text
    assert "With `--file`, `extends:` is followed when `--repo OWNER/NAME` names the repository the file is for" in text
    assert "`interlock doctor --github` reads the configuration as the App does, over what it extends" in text
    assert SMALL["name"] == "small"
