"""The action's install of Interlock (issue 16, item 2): cached between jobs under a key that is the action's
version, built with uv where uv can be had, with pip where it cannot, and never with the ``service`` extra.

The key step runs for real over a copy of the project. The install step runs for real too, with the tools it
calls (the runner's Python, uv) replaced by a recorder that logs each call and makes what the call would make:
what the step asks of them, in which order, is its behaviour. tests/bench/bench_install.py times the real thing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from app.cli.common import INSTALL_SERVICE
from tests.core_install import project
from tests.helpers import ROOT, doc
from tests.runner.test_action import ACTION, WORK_STEP, load, step_script

KEY_STEP, CACHE_STEP, UV_CACHE_STEP, INSTALL_STEP = (
    "Version of Interlock's environment",
    "Cached environment of Interlock",
    "Cached uv of Interlock's install",
    "Install Interlock into its own environment",
)
RECORDER = """\
import json, os, shutil, sys
from pathlib import Path
name, args, failing = Path(sys.argv[0]).name, sys.argv[1:], os.environ.get("FAILING", "")
with open(os.environ["RECORDED"], "a") as log:
    log.write(json.dumps([sys.argv[0], *args]) + "\\n")
if name in failing.split() or ("--target" in args and "uv-download" in failing):
    sys.exit(1)
if "venv" in args:
    (Path(args[-1]) / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(sys.argv[0], Path(args[-1]) / "bin" / "python")
if "--target" in args:
    (Path(args[args.index("--target") + 1]) / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(sys.argv[0], Path(args[args.index("--target") + 1]) / "bin" / "uv")
"""


def run_step(name: str, values: dict[str, str], cwd: Path, **runner: str) -> subprocess.CompletedProcess[str]:
    """The step's script as the runner runs a composite bash step, its ``env:`` evaluated from ``values``."""
    step = step_script(name)
    env = {
        key: re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: values[m[1]], str(text))
        for key, text in step["env"].items()
    }
    env |= {"PATH": "/usr/bin:/bin", "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", **runner}
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def expressions(tmp_path: Path, **more: str) -> dict[str, str]:
    return {
        "github.action_ref": "v1.2",
        "github.action_path": str(tmp_path / "project" / "action"),
        "steps.python.outputs.python-path": str(tmp_path / "python"),
        "steps.python.outputs.python-version": "3.12.7",
        "steps.cache.outputs.cache-hit": "",
        "inputs.install-args": "",
        "runner.temp": str(tmp_path / "temp"),
        **more,
    }


def cache_keys(tmp_path: Path, values: dict[str, str]) -> dict[str, str]:
    """The key step's outputs: the environment's key, the uv cache's key and its prefix."""
    output = tmp_path / "github-output"
    output.write_text("")
    temp = values["runner.temp"]
    result = run_step(KEY_STEP, values, tmp_path / "project", GITHUB_OUTPUT=str(output), RUNNER_TEMP=temp)
    assert result.returncode == 0, result.stderr
    return dict(line.split("=", 1) for line in output.read_text().splitlines())


def cache_key(tmp_path: Path, values: dict[str, str]) -> str:
    return cache_keys(tmp_path, values)["key"]


def test_the_cache_key_is_the_actions_version_python_and_runner(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "app", project / "app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "graphs", project / "graphs")
    shutil.copy(ROOT / "pyproject.toml", project)
    values = expressions(tmp_path)
    key = cache_key(tmp_path, values)
    assert re.fullmatch(r"interlock-venv-1-Linux-X64-py3\.12\.7-v1\.2-[0-9a-f]{16}-[0-9a-f]{12}", key), key
    assert cache_key(tmp_path, values) == key  # the same action, the same runner: the same key, a cache hit
    (project / "app" / "cli" / "assemble.py").write_text(
        (project / "app" / "cli" / "assemble.py").read_text() + "\n# changed\n"
    )
    changed = cache_key(tmp_path, values)
    assert changed != key and changed.rsplit("-", 2)[0] == key.rsplit("-", 2)[0]  # the files' hash is the version
    assert cache_key(tmp_path, values | {"inputs.install-args": "aider-chat"}) != changed  # more packages
    assert cache_key(tmp_path, values | {"steps.python.outputs.python-version": "3.12.8"}) != changed
    steps = [step.get("name") for step in load(ACTION)["runs"]["steps"]]
    assert steps.index(KEY_STEP) < steps.index(CACHE_STEP) < steps.index(UV_CACHE_STEP) < steps.index(INSTALL_STEP)
    cache = step_script(CACHE_STEP)
    assert cache["uses"].startswith("actions/cache/restore@")
    assert cache["with"]["key"] == "${{ steps.interlock.outputs.key }}"
    assert cache["with"]["path"] == "${{ runner.temp }}/interlock-venv"  # the environment the later steps run


def test_without_a_cached_environment_uv_and_its_downloads_come_from_the_newest_cache(tmp_path: Path) -> None:
    for folder in ("app", "graphs"):
        (tmp_path / "project" / folder).mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "project")
    keys = cache_keys(tmp_path, expressions(tmp_path))
    uv = step_script(INSTALL_STEP)["env"]["UV_VERSION"]
    assert step_script(KEY_STEP)["env"]["UV_VERSION"] == uv  # one uv: the one the cache is keyed on
    assert keys["uv-prefix"] == f"interlock-uv-{uv}-Linux-X64-py3.12.7-" and keys["uv-key"].startswith(
        keys["uv-prefix"]
    )
    assert keys["uv-key"].removeprefix(keys["uv-prefix"]) == keys["key"].split("-v1.2-")[1]  # a new one a version
    step = step_script(UV_CACHE_STEP)
    assert step["if"] == "steps.cache.outputs.cache-hit != 'true'" and step["uses"].startswith("actions/cache/restore@")
    assert step["with"]["key"] == "${{ steps.interlock.outputs.uv-key }}"
    assert step["with"]["restore-keys"] == "${{ steps.interlock.outputs.uv-prefix }}"
    assert step["with"]["path"].splitlines() == [
        "${{ runner.temp }}/interlock-uv",
        "${{ runner.temp }}/interlock-uv-cache",
    ]
    assert step_script(INSTALL_STEP)["env"]["UV_CACHE_DIR"] == "${{ runner.temp }}/interlock-uv-cache"
    # a restored uv is used as it is: nothing downloaded
    restored = tmp_path / "temp" / "interlock-uv" / "bin" / "uv"
    restored.parent.mkdir(parents=True)
    restored.write_text(f"#!{sys.executable}\n{RECORDER}")
    restored.chmod(0o755)
    _, calls = install(tmp_path)
    assert [call[:2] for call in calls] == [[str(restored), "venv"], [str(restored), "pip"]]


def install(tmp_path: Path, failing: str = "", uv_on_path: bool = False, **more: str) -> tuple[str, list[list[str]]]:
    """The install step with recording tools: its output and the calls it made, in order."""
    recorder, recorded = tmp_path / "python", tmp_path / "recorded.jsonl"
    recorder.write_text(f"#!{sys.executable}\n{RECORDER}")
    recorder.chmod(0o755)
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    path = "/usr/bin:/bin"
    if uv_on_path:
        shutil.copy(recorder, tools / "uv")
        path = f"{tools}:{path}"
    values = expressions(tmp_path, **{"inputs.install-args": "--index-url https://mirror.example/simple", **more})
    (tmp_path / "temp").mkdir(exist_ok=True)
    runner = {"RUNNER_TEMP": values["runner.temp"], "RECORDED": str(recorded), "FAILING": failing, "PATH": path}
    result = run_step(INSTALL_STEP, values, tmp_path / "temp", **runner)
    assert result.returncode == 0, result.stderr
    calls = [json.loads(line) for line in recorded.read_text().splitlines()] if recorded.exists() else []
    return result.stdout, calls


PROJECT_ARGS = ["--index-url", "https://mirror.example/simple"]


def test_uv_from_pypi_installs_the_core_and_the_install_args(tmp_path: Path) -> None:
    _, calls = install(tmp_path)
    python, temp, project = str(tmp_path / "python"), tmp_path / "temp", f"{tmp_path}/project/action/.."
    uv, venv = str(temp / "interlock-uv" / "bin" / "uv"), str(temp / "interlock-venv")
    download = [python, "-I", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"]
    assert calls[0] == [
        *download,
        str(temp / "interlock-uv"),
        "uv==0.13.9",
    ]  # the step's UV_VERSION  # uv from PyPI, into its own folder
    assert calls[1] == [uv, "venv", "--quiet", "--python", python, venv]
    assert calls[2] == [uv, "pip", "install", "--quiet", "--python", f"{venv}/bin/python", project, *PROJECT_ARGS]
    assert len(calls) == 3
    # the core only: the project's folder, never `.[service]` (FastAPI, uvicorn and the App's auth stay out)
    assert not any("[" in arg for call in calls for arg in call)


def test_a_uv_on_the_path_is_used_as_it_is(tmp_path: Path) -> None:
    _, calls = install(tmp_path, uv_on_path=True)
    assert [call[:2] for call in calls] == [
        [str(tmp_path / "tools" / "uv"), "venv"],
        [str(tmp_path / "tools" / "uv"), "pip"],
    ]


def test_pip_installs_where_uv_cannot_be_had_or_fails(tmp_path: Path) -> None:
    for failing in ("uv-download", "uv"):
        folder = tmp_path / failing
        folder.mkdir()
        output, calls = install(folder, failing=failing)
        temp, project = folder / "temp", f"{folder}/project/action/.."
        pip = [
            f"{temp}/interlock-venv/bin/python",
            "-I",
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            project,
            *PROJECT_ARGS,
        ]
        assert calls[-2:] == [[str(folder / "python"), "-I", "-m", "venv", f"{temp}/interlock-venv"], pip], failing
        assert "uv could not install Interlock: pip installs it" in output


def test_a_cached_environment_is_used_without_installing(tmp_path: Path) -> None:
    restored = tmp_path / "temp" / "interlock-venv" / "bin" / "python"
    restored.parent.mkdir(parents=True)
    restored.write_text(f"#!{sys.executable}\n{RECORDER}")
    restored.chmod(0o755)
    output, calls = install(tmp_path, **{"steps.cache.outputs.cache-hit": "true"})
    assert calls == [[str(restored), "-I", "-c", "import app"]] and "is the cached one" in output
    # restored, but its interpreter is not on this machine (another runner's paths): rebuilt, not used
    restored.unlink()
    restored.symlink_to(tmp_path / "no-such-python")
    output, calls = install(tmp_path, **{"steps.cache.outputs.cache-hit": "true"})
    assert "is the cached one" not in output and calls[-1][1:3] == ["pip", "install"]


def test_the_readme_describes_the_install_the_action_runs() -> None:
    readme = " ".join(doc("github/app.md", "github/action.md").split())
    start = readme.index("**The job's install.**")
    section = readme[start : readme.index("**Self-hosted runners.**", start)]
    uv = step_script(INSTALL_STEP)["env"]["UV_VERSION"]
    assert f"uv {uv} from the cache" in section and f"uv {uv} downloaded from PyPI" in section
    assert INSTALL_SERVICE in section and "keyed on the action's version" in section
    assert "pip installs it as before" in section and "python -m tests.bench.bench_install" in section
    assert (ROOT / "tests" / "bench" / "bench_install.py").exists()
    assert "pip install '.[service]'" in readme and "service" in project()


def test_the_caches_are_saved_right_after_the_install_never_after_the_agent_has_run() -> None:
    # actions/cache@ saves in a post step, at the job's end: the environment as the work job's agent left it (it
    # runs code an issue may steer, on the same runner, with write access to RUNNER_TEMP). A poisoned `interlock`
    # or a poisoned wheel in uv's cache would then run in every later job under that key, the deliver job too,
    # which pushes with the App's token. Restored with actions/cache/restore, saved before the agent's step.
    steps: list[dict[str, str | dict[str, str]]] = load(ACTION)["runs"]["steps"]
    names = [step.get("name") for step in steps]
    uses = [str(step.get("uses", "")) for step in steps]
    assert not [use for use in uses if use.startswith("actions/cache@")]  # no save in a post step
    saved = {
        str(step["with"]["key"]): index  # type: ignore[index]
        for index, step in enumerate(steps)
        if str(step.get("uses", "")).startswith("actions/cache/save@")
    }
    assert set(saved) == {"${{ steps.interlock.outputs.key }}", "${{ steps.interlock.outputs.uv-key }}"}
    assert all(names.index(INSTALL_STEP) < index < names.index(WORK_STEP) for index in saved.values())
    assert uses[names.index(CACHE_STEP)].startswith("actions/cache/restore@")
    assert uses[names.index(UV_CACHE_STEP)].startswith("actions/cache/restore@")
