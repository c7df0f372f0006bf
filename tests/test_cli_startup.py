"""The command line starts light (issue 16, item 5): importing ``app.cli.assemble``, and printing the help, loads
none of the modules a command loads when it runs. Checked in a fresh interpreter through ``sys.modules``, never by
timing (tests/bench/bench_cli.py prints the times), so that an import added at the top of a ``cli_*`` module
fails here instead of slowing every command down unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from app.cli.config import CONFIG_PATH
from tests.helpers import GRAPHS, ROOT

# what a command loads when it runs, never the command line itself: the service's and GitHub's clients, the
# HTTP agents' client, the git binding, the YAML reader, pydantic, and the engine's records and validator
HEAVY = (
    "fastapi",
    "uvicorn",
    "githubkit",
    "httpx",
    "pygit2",
    "yaml",
    "pydantic",
    "app.engine.events",
    "app.engine.record",
    "app.graphset",
    "app.local.shell",
    "app.runner.driver",
    "app.webhooks.service",
)
LOADED = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (then printing them)."""
    done = subprocess.run([sys.executable, "-c", f"{code}\n{LOADED}"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def command(*argv: str) -> str:
    """Code that runs ``interlock ARGV...`` in this interpreter and carries on (its exit caught)."""
    lines = ["import sys", f"sys.argv = ['interlock', *{list(argv)!r}]", "import app.cli.assemble"]
    return "\n".join([*lines, "try:", "    app.cli.assemble.main()", "except SystemExit:", "    pass"])


def test_importing_the_command_line_loads_no_heavy_module() -> None:
    loaded = modules_after("import app.cli.assemble")
    assert "app.cli.runs" in loaded and "app.cli.doctor" in loaded  # every command is registered
    assert sorted(loaded.intersection(HEAVY)) == []
    assert "rich" not in loaded  # typer loads it for the help, when the help is asked for


def test_the_help_of_every_command_loads_no_heavy_module() -> None:
    # rich's help formatter took longer than all the rest of `--help` (issue 16): the help is click's plain one;
    # typer is kept below 0.29, which converts every parameter through pydantic, help or not (pyproject.toml)
    assert sorted(modules_after(command("--help")).intersection((*HEAVY, "rich"))) == []
    for argv in (["run", "--help"], ["status", "--help"], ["config", "check", "--help"]):
        loaded = modules_after(command(*argv))
        assert sorted(loaded.intersection((*HEAVY, "rich"))) == [], argv


def test_validate_loads_the_graph_engine_but_no_client_git_or_shell() -> None:
    loaded = modules_after(command("validate", str(GRAPHS / "delivery" / "feature.json")))
    assert "app.graphset" in loaded  # the command ran
    assert sorted(loaded.intersection((*HEAVY[:6], "app.local.shell", "app.runner.driver"))) == []


def test_a_local_command_loads_no_github_client(tmp_path: Path) -> None:
    # a local report read its store through a module that imported the GitHub reader, and with it githubkit,
    # httpx and redis: 0.2 s of every local command's start (issue 29), and of every test that runs one
    loaded = modules_after(command("status", "nope", "--repo", str(tmp_path)))
    assert "app.local.shell" in loaded  # the command ran
    assert sorted(loaded.intersection(("githubkit", "httpx", "redis", "app.github.client", "fastapi"))) == []


def test_the_config_path_the_help_names_is_the_one_the_check_reads() -> None:
    from app.github.config import CONFIG_PATH as READ

    assert CONFIG_PATH == READ
