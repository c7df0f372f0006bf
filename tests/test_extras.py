"""The core install runs a mission job; the ``service`` extra is what the webhook service adds.

A mission job installs only pyproject.toml's ``dependencies`` (the action's install, README "The action"), so
nothing a job runs may import FastAPI, uvicorn, PyJWT or cryptography; a service command run without them
names the extra to install instead of failing with a traceback.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from app.cli.common import INSTALL_SERVICE, SERVICE_MODULES
from tests.core_install import closure, core_only_command, project, service_only_modules
from tests.helpers import ROOT


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports, wherever the import stands."""
    found: set[str] = set()
    for item in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(item, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in item.names}
        elif isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
            found.add(item.module.partition(".")[0])
    return found


def test_the_core_install_leaves_the_service_packages_to_the_extra() -> None:
    core = closure(project()[""])
    assert not {"fastapi", "uvicorn", "starlette", "cryptography", "pyjwt"} & core
    assert {"githubkit", "pygit2", "typer", "pydantic"} <= core  # what a job runs: GitHub, git, the CLI
    assert "interlock[service]" in project()["test"]  # the suite tests the service: `pip install -e '.[test]'`


def test_every_import_of_a_service_package_in_app_gets_the_message() -> None:
    imported = set().union(*(imported_modules(path) for path in (ROOT / "app").rglob("*.py")))
    # opentelemetry comes with FastAPI, but app/ imports it for the otel extra only, when traces are on
    assert imported & service_only_modules() - {"opentelemetry"} <= SERVICE_MODULES
    assert {"fastapi", "uvicorn", "cryptography"} <= imported & service_only_modules()


def test_a_service_command_in_a_core_install_names_the_extra(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s"}
    env["GITHUB_APP_PRIVATE_KEY"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    for command in (["serve", "--port", "9"], ["redeliver", "--dry-run"]):
        result = subprocess.run(
            core_only_command(*command), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
        )
        assert result.returncode == 2, result.stderr
        assert re.fullmatch(
            r"error: .*service extra \((uvicorn|cryptography) is not installed here\): .*\n", result.stderr
        )
        assert INSTALL_SERVICE in result.stderr and "Traceback" not in result.stderr


def test_a_core_install_runs_the_demo(tmp_path: Path) -> None:
    result = subprocess.run(core_only_command("demo"), capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "shows the agent's commits" in result.stdout


def test_the_image_installs_the_service_extra(tmp_path: Path) -> None:
    # the Dockerfile's own requirements line, run on this pyproject.toml
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if "requirements.txt" in line and "python -c" in line)
    code = re.search(r'python -c "([^"]+)"', line)
    assert code is not None
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    listed = subprocess.run(
        ["python3", "-c", code[1].replace("/tmp/build/", f"{tmp_path}/")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert listed == project()[""] + project()["service"]
