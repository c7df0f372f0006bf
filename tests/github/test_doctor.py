"""`interlock doctor --github OWNER/NAME` against the stand-in GitHub on loopback: the real command, the real
githubkit client with app credentials, `GITHUB_API_URL` pointing at the stand-in; every request it makes is
checked against GitHub's OpenAPI description."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import yaml

from app.github.client import GitHubApp
from app.github.doctor import APP_PERMISSIONS, DISPATCH_INPUTS, check_repository
from app.webhooks.handlers import Handlers
from app.webhooks.router import Router
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub
from tests.github.git_github import Loopback
from tests.github.test_flows import World
from tests.helpers import GRAPHS, ROOT
from tests.webhooks.conftest import SECRET, pem_key

REPO = "octo/app"
WORKFLOW = (ROOT / ".github" / "workflows" / "interlock.yml").read_text()
GRAPH = {
    "name": "loop",
    "entry": "build",
    "nodes": [{"stage": "build", "capability": "coding"}],
    "edges": [{"from": "build", "verdict": "PASS", "to": "__end__"}],
}
KEY = pem_key()


def good_files() -> dict[str, str]:
    return {
        ".github/workflows/interlock.yml": WORKFLOW,
        ".github/interlock.yml": "base: develop\ndefault_graph: loop\nrunners: {coding: [self-hosted, gpu]}\n",
        ".github/interlock/graphs/loop.json": json.dumps(GRAPH),
        "README.md": "# app\n",
    }


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    stand_in = FakeGitHub()
    with Loopback(stand_in) as served:
        stand_in.url = served.url  # type: ignore[attr-defined]
        yield stand_in


def doctor(fake: FakeGitHub, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    variables = {
        **os.environ,
        "GITHUB_APP_ID": "12345",
        "GITHUB_APP_PRIVATE_KEY": KEY,
        "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
        "GITHUB_API_URL": fake.url,  # type: ignore[attr-defined]
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "300",
        **env,
    }
    result = subprocess.run(
        [sys.executable, "-m", "app", "doctor", *args], capture_output=True, text=True, env=variables, timeout=60
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def findings(result: subprocess.CompletedProcess[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """The findings by (code, subject); the first of several on one subject (all are in the JSON)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for item in json.loads(result.stdout)["findings"]:
        found.setdefault((item["code"], item["subject"]), item)
    return found


def good_repository(fake: FakeGitHub) -> None:
    fake.seed_branch(REPO, "main", good_files())
    fake.seed_branch(REPO, "develop", good_files())
    fake.repo_labels.add("feature-request")
    assert fake.installation is not None
    fake.installation["permissions"]["administration"] = "read"
    labels = [{"id": i, "name": name, "type": "custom"} for i, name in enumerate(["self-hosted", "Linux", "GPU"])]
    fake.runners = [{"id": 1, "name": "box", "os": "linux", "status": "online", "busy": False, "labels": labels}]


def test_a_ready_repository_has_no_finding_but_ok_and_exits_0(fake: FakeGitHub) -> None:
    good_repository(fake)
    result = doctor(fake, "--github", REPO, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = findings(result)
    assert {item["severity"] for item in data.values()} == {"ok"}
    for code in ("app-credentials", "app-installation", "app-permission", "app-event", "repository", "workflow-inputs"):
        assert any(found == code for found, _ in data), code
    assert data[("workflow-inputs", ".github/workflows/interlock.yml on develop")]["severity"] == "ok"
    assert data[("graph", "default_graph loop")]["message"] == "from .github/interlock/graphs/loop.json"
    assert data[("runner-labels", "runners.coding")]["message"] == "1 runner(s) carry self-hosted, gpu"
    # GITHUB_API_URL honoured: every call reached the stand-in, and each is one GitHub describes
    assert "GET /app" in fake.calls() and f"GET /repos/{REPO}/installation" in fake.calls()
    assert fake.problems == []


def test_a_broken_repository_gets_every_finding_with_its_fix(fake: FakeGitHub) -> None:
    broken = {**good_files(), ".github/interlock.yml": "trigger_lable: go\n"}  # a typo: defaults apply
    workflow = yaml.safe_load(WORKFLOW)
    del workflow[True]["workflow_dispatch"]["inputs"]["stage"]
    workflow[True]["workflow_dispatch"]["inputs"]["ticket"] = {"required": True, "type": "string"}
    broken[".github/workflows/interlock.yml"] = yaml.safe_dump(workflow)
    broken[".github/interlock/graphs/bad.json"] = json.dumps(
        {**GRAPH, "edges": [{"from": "build", "verdict": "PASS", "to": "nowhere"}]}
    )
    fake.seed_branch(REPO, "main", broken)  # no develop branch, no label
    assert fake.installation is not None
    fake.installation["permissions"]["actions"] = "read"
    fake.installation["events"].remove("workflow_run")
    result = doctor(fake, "--github", REPO, "--json")
    assert result.returncode == 1, result.stderr
    found = findings(result)
    expected = {
        ("repo-config", ".github/interlock.yml on main"): "trigger_lable: Extra inputs are not permitted",
        ("workflow-inputs", ".github/workflows/interlock.yml on main"): "`stage`",
        ("workflow-file", ".github/workflows/interlock.yml on develop"): "no workflow file",
        ("base-branch", "base branch develop"): "has no branch develop",
        ("trigger-label", "feature-request"): "no label `feature-request`",
        ("app-permission", "actions"): "actions: read, needs write",
        ("app-event", "workflow_run"): "not subscribed to `workflow_run`",
        ("graph", ".github/interlock/graphs/bad.json"): "edge-to-unknown",
    }
    for key, words in expected.items():
        assert key in found, (key, sorted(found))
        assert found[key]["severity"] == "error" and words in found[key]["message"], found[key]
        assert found[key]["fix"], key
    assert found[("repo-config", ".github/interlock.yml on main")]["fix"].startswith(
        "rename `trigger_lable` to `trigger_label` in .github/interlock.yml on main"
    )
    assert "gh label create" in found[("trigger-label", "feature-request")]["fix"]
    everything = json.loads(result.stdout)
    assert everything["ok"] is False
    assert any("requires the input `ticket`" in item["message"] for item in everything["findings"])
    assert found[("graph", "default_graph feature")]["message"] == "from the bundled library"  # the defaults
    assert "Actions to Write" in found[("app-permission", "actions")]["fix"]
    assert found[("workflow-file", ".github/workflows/interlock.yml on develop")]["fix"].startswith("copy Interlock's")
    assert fake.problems == []


def test_the_text_report_shows_each_fix_under_its_finding(fake: FakeGitHub) -> None:
    fake.seed_branch(REPO, "main", good_files())
    result = doctor(fake, "--repo", REPO)  # --repo OWNER/NAME that is no folder means --github
    assert result.returncode == 1
    assert f"checking the GitHub repository {REPO}" in result.stderr
    lines = result.stdout.splitlines()
    label = next(i for i, line in enumerate(lines) if line.startswith("error") and "trigger-label" in line)
    assert lines[label + 1].strip().startswith("fix: create it (`gh label create")
    assert lines[0] == f"interlock doctor: {REPO} on GitHub" and lines[-1] == "3 error(s), 1 warning(s), 9 ok"


def in_process(fake: FakeGitHub, settings: ServiceSettings) -> dict[tuple[str, str], dict[str, Any]]:
    """The same checks without a process: the stand-in behind an httpx transport (faster, same requests)."""
    app = GitHubApp(replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=fake.transport())
    events = {event for event, _ in Handlers(app, []).register(Router()).handlers}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for finding in check_repository(app, REPO, [GRAPHS], events):
        found.setdefault((finding.code.value, finding.subject), finding.to_json())
    return found


def test_credentials_and_the_api_address_are_checked_first(fake: FakeGitHub) -> None:
    nowhere = doctor(fake, "--github", REPO, "--json", GITHUB_API_URL="http://127.0.0.1:9/api/v3")
    assert nowhere.returncode == 1
    assert findings(nowhere)[("github-api", "http://127.0.0.1:9/api/v3")]["fix"].startswith("check GITHUB_API_URL")
    unset = doctor(fake, "--github", REPO, GITHUB_APP_ID="", GITHUB_WEBHOOK_SECRET="")
    assert unset.returncode == 1 and "GITHUB_APP_ID (or GITHUB_APP_CLIENT_ID) is not set" in unset.stdout
    assert "GITHUB_WEBHOOK_SECRET is not set" in unset.stdout and "app-installation" not in unset.stdout


def test_a_missing_webhook_secret_is_reported_and_the_checks_go_on(fake: FakeGitHub) -> None:
    good_repository(fake)
    no_secret = findings(doctor(fake, "--github", REPO, "--json", GITHUB_WEBHOOK_SECRET=""))
    assert no_secret[("app-credentials", "environment")]["message"].startswith("GITHUB_WEBHOOK_SECRET is not set")
    assert no_secret[("trigger-label", "feature-request")]["severity"] == "ok"  # the API checks still ran
    bad = doctor(fake, "--github", "not a repo")
    assert bad.returncode == 2 and "--github takes OWNER/NAME" in bad.stderr


def test_installation_missing_suspended_or_credentials_refused(fake: FakeGitHub, settings: ServiceSettings) -> None:
    good_repository(fake)
    installation = fake.installation
    fake.installation = None
    item = in_process(fake, settings)[("app-installation", REPO)]
    assert item["severity"] == "error"  # the install page is on the host of GITHUB_API_URL (GitHub Enterprise Server)
    assert "(http://github.test/apps/interlock-app/installations/new)" in item["fix"]
    fake.installation = {**(installation or {}), "suspended_at": "2025-01-01T00:00:00Z"}
    suspended = in_process(fake, settings)[("app-installation", REPO)]
    assert suspended["severity"] == "error" and "suspended" in suspended["message"]
    assert suspended["fix"].startswith("unsuspend")
    fake.fail("GET", "/app", 401)
    refused = in_process(fake, settings)
    assert "401" in refused[("app-credentials", "app 12345")]["message"] and len(refused) == 1
    assert fake.problems == []


def test_runners_unlisted_offline_or_ignored_by_the_workflow_are_warnings(
    fake: FakeGitHub, settings: ServiceSettings
) -> None:
    good_repository(fake)
    assert fake.installation is not None and fake.runners is not None
    fake.runners[0]["status"] = "offline"
    fixed = WORKFLOW.replace("${{ fromJSON(inputs.runner) }}", "ubuntu-latest")
    fake.seed_branch(REPO, "develop", {**good_files(), ".github/workflows/interlock.yml": fixed})
    result = doctor(fake, "--github", REPO, "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["ok"] is True  # warnings alone: exit 0
    found = findings(result)
    assert "are all offline" in found[("runner-labels", "runners.coding")]["message"]
    ignored = found[("workflow-runner", ".github/workflows/interlock.yml on develop")]
    assert ignored["severity"] == "warning" and "never reads `inputs.runner`" in ignored["message"]
    del fake.installation["permissions"]["administration"]
    item = in_process(fake, settings)[("runner-labels", "runners.coding")]
    assert item["severity"] == "warning" and "could not be checked" in item["message"]
    assert fake.calls().count(f"GET /repos/{REPO}/actions/runners") == 1  # only while it was permitted


def test_what_doctor_expects_is_what_the_service_uses(settings: ServiceSettings) -> None:
    manifest = json.loads((ROOT / ".github" / "app-manifest.json").read_text())
    assert manifest["default_permissions"] == APP_PERMISSIONS
    declared = yaml.safe_load(WORKFLOW)[True]["workflow_dispatch"]["inputs"]
    assert tuple(declared) == DISPATCH_INPUTS
    world = World(settings)  # a run started by a labelled issue dispatches its first mission
    world.label()
    assert tuple(world.fake.dispatches[0]["inputs"]) == DISPATCH_INPUTS


@pytest.mark.parametrize(
    "text",
    [
        "on:\n  workflow_dispatch:\n    inputs: [run, mission, stage, runner]\n",  # inputs as a list
        "on:\n  workflow_dispatch: [run]\n",  # workflow_dispatch as a list
        "on: [push, {workflow_dispatch: {}}]\n",  # a mapping inside the list of events
    ],
)
def test_a_workflow_of_the_wrong_shape_is_a_finding_not_a_crash(
    fake: FakeGitHub, settings: ServiceSettings, text: str
) -> None:
    # README `interlock doctor`: a workflow file of any shape gets a finding; doctor never stops with a traceback
    good_repository(fake)
    fake.seed_branch(REPO, "main", {**good_files(), ".github/workflows/interlock.yml": text})
    item = in_process(fake, settings)[("workflow-inputs", ".github/workflows/interlock.yml on main")]
    assert item["severity"] == "error" and item["fix"], item
