"""App-less mode on loopback: no service at all. Each workflow event is one `interlock handle` process with
the job's token, each mission one `interlock step` process followed by `interlock handle --finished`, as
the two workflows in `.github/workflows/` run them, against the git-backed GitHub stand-in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.core_install import core_only_command
from tests.e2e.test_loop import AGENT, REPO, bare_origin, git, labeled_by_alice, now, stand_in
from tests.github.git_github import GitBackedGitHub, Loopback
from tests.github.test_flows import example
from tests.helpers import ROOT

TOKEN = "ghs_" + "t" * 36


class Actions:
    """What GitHub Actions does in App-less mode: a job per event, a job per dispatched mission."""

    def __init__(self, tmp_path: Path, fake: GitBackedGitHub, api_url: str, origin: Path) -> None:
        self.tmp, self.fake, self.api_url, self.origin = tmp_path, fake, api_url, origin
        self.agent = tmp_path / "agent.py"
        self.agent.write_text(AGENT)
        self.run_ids = 7000
        self.done_jobs = 0

    def job(self, argv: list[str], event: str, payload: dict[str, Any]) -> str:
        self.run_ids += 1
        path = self.tmp / f"event-{self.run_ids}.json"
        path.write_text(json.dumps(payload))
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.tmp),
            "PYTHONPATH": str(ROOT),
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_API_URL": self.api_url,
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(path),
            "GITHUB_RUN_ID": str(self.run_ids),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKFLOW_REF": f"{REPO}/.github/workflows/interlock.yml@refs/heads/main",
        }
        result = subprocess.run(
            core_only_command(*argv), env=env, capture_output=True, text=True, timeout=120, cwd=self.tmp
        )
        assert result.returncode == 0, result.stderr
        assert TOKEN not in result.stdout + result.stderr
        return result.stdout

    def event(self, event: str, payload: dict[str, Any]) -> str:
        return self.job(["handle"], event, payload)

    def mission(self) -> dict[str, str]:
        """The next dispatched mission: the `work` job, then the `deliver` job ending with
        `interlock handle --finished success`, as `.github/workflows/interlock.yml` runs them."""
        dispatch = self.fake.dispatches[self.done_jobs]
        self.done_jobs += 1
        inputs, branch = dispatch["inputs"], dispatch["ref"]
        checkout, handoff = self.tmp / f"job-{inputs['mission']}", self.tmp / f"handoff-{inputs['mission']}"
        subprocess.run(["git", "clone", "--quiet", "-b", branch, str(self.origin), str(checkout)], check=True)
        mission = ["step", "--run", inputs["run"], "--mission", inputs["mission"], "--handoff", str(handoff)]
        agent = f"command:{sys.executable} {self.agent}"
        self.job([*mission, "--phase", "work", "--workdir", str(checkout), "--agent", agent], "workflow_dispatch", {})
        self.job([*mission, "--phase", "deliver", "--remote", str(self.origin)], "workflow_dispatch", {})
        payload = {
            "inputs": inputs,
            "ref": f"refs/heads/{dispatch['ref']}",
            "repository": {"full_name": REPO, "default_branch": "main"},
            "sender": {"login": "github-actions[bot]", "type": "Bot"},
        }
        finished = self.job(["handle", "--finished", "success"], "workflow_dispatch", payload)
        assert "workflow_run.completed: handled" in finished
        return inputs


@pytest.fixture
def actions(tmp_path: Path) -> Iterator[Actions]:
    origin = bare_origin(tmp_path)
    fake = stand_in(origin)
    with Loopback(fake) as server:
        yield Actions(tmp_path, fake, server.url, origin)


def test_appless_mode_runs_the_loop_with_workflow_jobs_only(actions: Actions) -> None:
    # App-less mode (issue 6): the same handlers, driven by workflow events and the job's token
    labeled = labeled_by_alice()
    labeled["repository"] = {**labeled["repository"], "full_name": REPO, "default_branch": "main"}
    issue = labeled["issue"]["number"]
    assert "issues.labeled: handled" in actions.event("issues", labeled)
    stages = [actions.mission()["stage"] for _ in range(5)]
    assert stages == ["build", "review", "build", "review", "polish"]
    run = json.loads(git(actions.origin, "show", f"interlock/state:runs/issue-{issue}.json"))
    assert run["status"] == "gate_wait"
    review = example("pull_request_review", "submitted.payload.json")
    review["pull_request"]["head"] = {**review["pull_request"]["head"], "ref": f"interlock/issue-{issue}"}
    review["review"] = {**review["review"], "state": "approved", "user": {"login": "carol"}, "submitted_at": now()}
    review["repository"] = {**review["repository"], "full_name": REPO, "default_branch": "main"}
    head = git(actions.origin, "rev-parse", f"interlock/issue-{issue}")
    assert run["gate"]["head"] == head  # SPEC H5: the job's record named the head it pushed
    review["review"]["commit_id"] = head  # the review is of what the gate opened on
    assert "pull_request_review.submitted: handled" in actions.event("pull_request_review", review)
    run = json.loads(git(actions.origin, "show", f"interlock/state:runs/issue-{issue}.json"))
    assert run["status"] == "awaiting_merge" and actions.fake.pulls[int(run["links"]["pr"])]["draft"] is False
    assert not any(call.endswith("/access_tokens") for call in actions.fake.calls())  # the job's token, no app
    assert actions.fake.problems == []
