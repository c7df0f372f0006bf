"""The files a repository uses to run Interlock on GitHub: the action, the workflows, the Dockerfile.

No runner or Docker engine is available here, so each file is read as GitHub (or Docker) reads it and
checked against the code it calls: the commands and options exist, the inputs the service dispatches are
the inputs the workflow declares, the run name is what the service parses, and the action's own script is
executed against a real repository.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from app.agents.environment import AGENT_KEYS, BASE, PASSED, READ_TOKEN_NAMES, REFUSED, agent_keys
from app.runner.isolate import NETWORK
from app.webhooks.handlers import JOB_TITLE, Handlers
from app.webhooks.router import Router
from tests.core_install import core_only_command
from tests.helpers import ROOT, doc
from tests.runner.test_job import (
    AGENT,
    BRANCH,
    JOB_TOKEN,
    PUSH_TOKEN,
    READ_TOKEN,
    RUN,
    dump_agent,
    origin,
    runner_home,
    state_file,
)

ACTION = ROOT / "action" / "action.yml"
MISSION_WORKFLOW = ROOT / ".github" / "workflows" / "interlock.yml"
EVENTS_WORKFLOW = ROOT / ".github" / "workflows" / "interlock-events.yml"
__all__ = ["origin"]


def load(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def cli_help(*command: str) -> str:
    result = subprocess.run([sys.executable, "-m", "app", *command, "--help"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result.stdout


def step_script(name: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = load(ACTION)["runs"]["steps"]
    return next(s for s in steps if s.get("name", "") == name)


WORK_STEP, OTHER_STEP = "Interlock work", "Interlock ${{ inputs.command }}"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def step_env(step: dict[str, Any], inputs: dict[str, str], job_token: str) -> dict[str, str]:
    """The step's ``env:`` as the runner evaluates it: inputs (else the action's defaults), the job's token."""
    defaults = {name: str(spec.get("default", "")) for name, spec in load(ACTION)["inputs"].items()}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "github.token":
            return job_token
        if name == "github.action_path":
            return str(ROOT / "action")
        assert name.startswith("inputs."), name
        found = inputs.get(name.removeprefix("inputs."), defaults[name.removeprefix("inputs.")])
        return EXPRESSION.sub(value, found)

    return {key: EXPRESSION.sub(value, str(text)) for key, text in step["env"].items()}


def test_the_action_installs_itself_in_its_own_environment() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    wanted = {"command", "run", "mission", "handoff", "work-result", "python-version", "install-args", "agent"}
    assert wanted | {"token", "read-token", "agent-env", "timeout"} <= set(action["inputs"])
    install = step_script("Install Interlock into its own environment")
    assert install["env"]["PROJECT"] == "${{ github.action_path }}/.."  # the action's copy, not the checkout
    assert install["working-directory"] == "${{ runner.temp }}"  # `python -m` imports from the current folder
    assert (
        '"$PYTHON" -I -m venv "$RUNNER_TEMP/interlock-venv"' in install["run"] and 'python" -I -m pip' in install["run"]
    )
    assert all(step_script(name)["env"]["PYTHONSAFEPATH"] == "1" for name in (WORK_STEP, OTHER_STEP))
    for step in action["runs"]["steps"]:
        assert "${{ inputs." not in step.get("run", ""), "inputs reach scripts through env, never interpolated"


def test_the_action_calls_commands_that_exist() -> None:
    assert "--phase work" in step_script(WORK_STEP)["run"] and "--phase deliver" in step_script(OTHER_STEP)["run"]
    options = cli_help("step")
    flags = ("--run", "--mission", "--phase", "--handoff", "--work-result", "--remote", "--timeout", "INTERLOCK_AGENT")
    assert all(flag in options for flag in flags)
    assert "--finished" in cli_help("handle")


def run_action_script(
    tmp_path: Path, checkout: Path, inputs: dict[str, str], runner: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The action's Interlock step for ``inputs["command"]`` as the runner runs it — its ``env:`` evaluated,
    over the runner's own variables — with the venv's `interlock` standing for the install."""
    venv_bin = tmp_path / "runner-temp" / "interlock-venv" / "bin"
    venv_bin.mkdir(parents=True, exist_ok=True)
    shim = venv_bin / "interlock"
    # the job installs the core alone: none of the service extra's modules can be imported (tests/core_install.py)
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec {shlex.join(core_only_command())} "$@"\n')
    shim.chmod(0o755)
    work = inputs["command"] == "work"
    step = step_script(WORK_STEP if work else OTHER_STEP)
    assert step["if"] == ("inputs.command == 'work'" if work else "inputs.command != 'work'")
    full = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RUNNER_TEMP": str(tmp_path / "runner-temp")}
    full |= {"GITHUB_SERVER_URL": str(tmp_path), "GITHUB_REPOSITORY": "origin", **(runner or {})}
    full |= step_env(step, inputs, JOB_TOKEN)
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=checkout, env=full, capture_output=True, text=True)


def test_the_action_script_runs_a_mission_as_two_jobs(origin: Path, tmp_path: Path) -> None:
    # SPEC GH3: `work` in the checkout with a read token, `deliver` elsewhere with the write token
    checkout = tmp_path / "workspace"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    mission = {"run": RUN, "mission": "1", "timeout": "60", "handoff": str(tmp_path / "handoff")}
    seen = {"SEEN": str(tmp_path / "seen.json")}
    work = {**mission, "command": "work", "agent": f"command:{sys.executable} {agent}", "agent-env": "SEEN"}
    result = run_action_script(tmp_path, checkout, work, seen)
    assert result.returncode == 0, result.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json") is None
    scratch = tmp_path / "deliver-job"  # the deliver job has no checkout
    scratch.mkdir()
    deliver = {**mission, "command": "deliver", "token": PUSH_TOKEN, "work-result": "success"}
    result = run_action_script(tmp_path, scratch, deliver)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "done" and record["commits"] == 1
    result = run_action_script(tmp_path, scratch, {**deliver, "command": "dance"})
    assert result.returncode == 2 and "unknown command 'dance'" in result.stdout


def test_the_write_token_is_not_in_the_work_step_and_the_agent_sees_no_credential(origin: Path, tmp_path: Path) -> None:
    # SPEC GH9: whatever `token` holds (an App token can write), `work` never has it; the agent gets read-token
    work_env = step_script(WORK_STEP)["env"]
    assert not any("inputs.token" in str(value) for value in work_env.values())
    assert work_env["GITHUB_TOKEN"] == "${{ github.token }}"  # read-only: the work job has contents: read
    checkout = tmp_path / "workspace"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent, out = dump_agent(tmp_path)
    inputs = {"command": "work", "run": RUN, "mission": "1", "handoff": str(tmp_path / "handoff"), "agent": agent}
    inputs |= {"token": PUSH_TOKEN, "read-token": READ_TOKEN}
    runner = {"INTERLOCK_TOKEN": PUSH_TOKEN, "ACTIONS_RUNTIME_TOKEN": "runtime-secret-value"}
    runner |= {"GITHUB_ENV": str(tmp_path / "github-env"), "HOME": str(runner_home(tmp_path))}
    result = run_action_script(tmp_path, checkout, inputs, runner)
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    assert seen["env"]["GITHUB_TOKEN"] == seen["env"]["GH_TOKEN"] == READ_TOKEN
    assert any(path.endswith("/environ") for path in seen["ancestors"])
    for secret in (PUSH_TOKEN, JOB_TOKEN, "runtime-secret-value", "github-env"):
        assert secret not in json.dumps(seen), secret  # its environment, its files, and /proc of its ancestors
    handed = b"".join(p.read_bytes() for p in (tmp_path / "handoff").rglob("*") if p.is_file())
    assert handed and PUSH_TOKEN.encode() not in handed and JOB_TOKEN.encode() not in handed


def test_the_mission_workflow_matches_what_the_service_dispatches_and_parses() -> None:
    # SPEC GH3: the service finds a job's mission from its run name; dispatch inputs are the declared ones
    workflow = load(MISSION_WORKFLOW)
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"run", "mission", "stage", "runner"} and len(inputs) <= 25
    name = workflow["run-name"]
    assert name == "interlock ${{ inputs.run }} mission ${{ inputs.mission }} (${{ inputs.stage }})"
    rendered = name.replace("${{ inputs.run }}", "issue-12").replace("${{ inputs.mission }}", "3")
    found = JOB_TITLE.fullmatch(rendered.replace("${{ inputs.stage }}", "review (fast)"))
    assert found is not None and found.groups() == ("issue-12", "3", "review (fast)")
    assert workflow["concurrency"]["group"] == "interlock-${{ inputs.run }}"
    assert json.loads(inputs["runner"]["default"]) == "ubuntu-latest"


def test_the_agent_shares_its_job_with_nothing_that_can_write() -> None:
    # SPEC GH2: the write token never reaches the agent: the agent's job has a read-only token
    workflow = load(MISSION_WORKFLOW)
    assert workflow["permissions"] == {}
    work, deliver = workflow["jobs"]["work"], workflow["jobs"]["deliver"]
    assert work["permissions"] == {"contents": "read"} and work["runs-on"] == "${{ fromJSON(inputs.runner) }}"
    assert work["timeout-minutes"] > 0 and deliver["timeout-minutes"] > 0
    checkout = work["steps"][0]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["ref"] == "${{ github.ref }}"
    assert checkout["with"]["persist-credentials"] is False
    assert (checkout["with"]["filter"], checkout["with"]["fetch-depth"]) == ("blob:none", 0)  # issue 27: partial
    assert [s["with"]["command"] for s in work["steps"] if "interlock" in s["uses"]] == ["work"]
    assert deliver["needs"] == "work" and deliver["if"] == "${{ always() }}"
    assert deliver["permissions"]["contents"] == "write"
    assert not any("checkout" in s.get("uses", "") for s in deliver["steps"])  # nothing of the agent's runs here
    commands = [s["with"]["command"] for s in deliver["steps"] if "interlock" in s.get("uses", "")]
    assert commands == ["deliver", "handle"]
    uploaded = next(s for s in work["steps"] if s["uses"].startswith("actions/upload-artifact"))
    downloaded = next(s for s in deliver["steps"] if s["uses"].startswith("actions/download-artifact"))
    assert uploaded["with"]["name"] == downloaded["with"]["name"] and uploaded["if"] == "${{ always() }}"


def test_the_events_workflow_listens_to_every_event_the_service_handles() -> None:
    # App-less mode: the same handlers, driven by workflow events
    router = Handlers(None, []).register(Router())  # type: ignore[arg-type]
    handled = {(event, action) for event, action in router.handlers}
    on = load(EVENTS_WORKFLOW)["on"]
    listened = {(event, action) for event, spec in on.items() for action in spec["types"]}
    assert handled == listened
    manifest = json.loads((ROOT / ".github" / "app-manifest.json").read_text())
    assert {event for event, _ in handled} <= set(manifest["default_events"])


def test_the_dockerfile_serves_the_app_as_a_non_root_user_with_a_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    instructions = [line.split(maxsplit=1) for line in text.replace("\\\n", " ").splitlines() if line.strip()]
    first = {word: rest for word, rest in reversed([i for i in instructions if not i[0].startswith("#")])}
    base = re.match(r"python:(\d+)\.(\d+)", first["FROM"])
    assert base is not None and (int(base[1]), int(base[2])) >= (3, 11)
    assert first["USER"].strip() not in ("root", "0")
    assert "COPY pyproject.toml" in text and "['project']['dependencies']" in text and "COPY graphs" in text
    assert "pip install --no-deps /tmp/build && rm -rf /tmp/build" in text  # no source left to shadow the install
    cmd = json.loads(first["CMD"])
    assert cmd[:2] == ["interlock", "serve"] and cmd[cmd.index("--port") + 1] in first["EXPOSE"]
    assert all(option in cli_help("serve") for option in ("--host", "--port"))
    assert (
        "/healthz" in first["HEALTHCHECK"]
        and '@app.get("/healthz")' in (ROOT / "app" / "webhooks" / "service.py").read_text()
    )
    assert os.path.exists(ROOT / ".dockerignore")


def test_the_images_command_serves_and_its_healthcheck_sees_it(tmp_path: Path) -> None:
    # the Dockerfile's CMD and HEALTHCHECK, run as the image would (port changed, no Docker engine here)
    from tests.e2e.test_loop import free_port
    from tests.webhooks.conftest import pem_key

    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M)[1])  # type: ignore[index]
    probe = json.loads(re.search(r"HEALTHCHECK .*?CMD (\[.*\])$", text, re.M)[1])  # type: ignore[index]
    port = str(free_port())
    cmd[cmd.index("--port") + 1] = port
    assert probe[0] == "python"
    probe = [sys.executable, *(part.replace("8000", port) for part in probe[1:])]
    env = {**os.environ, "GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_PRIVATE_KEY": pem_key()}
    env["PYTHONPATH"] = str(ROOT)
    assert subprocess.run(probe, capture_output=True, timeout=30).returncode != 0  # nothing listens yet
    server = subprocess.Popen(
        [sys.executable, "-m", "app", *cmd[1:]],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            if subprocess.run(probe, capture_output=True, timeout=30).returncode == 0:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the health check never passed")
    finally:
        server.terminate()
        server.wait(timeout=15)


def readme_part(start: str, end: str) -> str:
    text = " ".join(doc("github/action.md").split())
    return text[text.index(start) : text.index(end, text.index(start))]


def test_the_readme_says_exactly_what_the_agent_gets() -> None:
    # the README's credentials paragraph is the allow-list of app/agents/environment.py, name for name
    said = readme_part("**What the agent gets.**", "- **`deliver`**")
    named = set(re.findall(r"`([A-Z][A-Z0-9_]*\*?)`", said))
    keys = {key for spec_keys in AGENT_KEYS.values() for key in spec_keys}
    assert {*BASE, *PASSED, *keys, *READ_TOKEN_NAMES, "LC_*"} <= named
    assert set(NETWORK) <= named and "`/proc/<pid>/environ`" in said  # what Interlock's own process keeps
    allowed = {*BASE, *PASSED, *keys, *READ_TOKEN_NAMES, *NETWORK, "LC_*", "HOME", "ANTHROPIC_*", "INTERLOCK_*"}
    refused = named - allowed
    assert refused and all(REFUSED.match(name.replace("*", "RUNTIME_TOKEN")) for name in refused), refused
    assert agent_keys("aider") == (*agent_keys("anthropic:m"), *agent_keys("openai:m"))  # "all four for aider"
    inputs = readme_part("Action inputs:", "Pin the action")
    assert [name for name in load(ACTION)["inputs"] if f"`{name}`" not in inputs] == []
