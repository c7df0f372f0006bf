"""Helpers for end-to-end tests: a real git repository in a temporary folder and a scripted agent."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import git

from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.gitaccess import ON_MACHINE
from app.local.config import GateMode, LocalConfig
from app.local.shell import LocalShell
from app.store.layout import sharded
from tests.helpers import ROOT

IDENTITY = ON_MACHINE.env()  # what a commit made by hand in a test names: Interlock, as on a machine
AGENT = f"{sys.executable} {Path(__file__).with_name('scripted_agent.py')}"


def make_repo(folder: Path, base: str = "develop") -> git.Repo:
    """A repository with one commit on ``main`` and the branch ``base``: a copy of one built once per test
    process (issue 29: copying is a sixth of the cost of building, and most tests start from one)."""
    shutil.copytree(_template(base), folder, symlinks=True, dirs_exist_ok=True)
    return git.Repo(folder)


@functools.cache
def _template(base: str) -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="interlock-template-"))
    atexit.register(shutil.rmtree, scratch, True)
    folder = scratch / "repo"
    repo = git.Repo.init(folder, initial_branch="main")
    (folder / "README.md").write_text("# test repo\n")
    repo.index.add(["README.md"])
    with repo.git.custom_environment(**IDENTITY):
        repo.git.commit("-m", "initial")
    if base != "main":
        repo.git.branch(base)
    repo.close()
    return folder


class Bench:
    """A repository, a script for the agent, and a shell to drive runs."""

    def __init__(self, tmp: Path, script: dict[str, Any], monkeypatch: Any, **config: Any) -> None:
        self.folder = tmp / "repo"
        self.log = tmp / "log"
        self.repo = make_repo(self.folder)
        self.script_file = tmp / "script.json"
        self.script_file.write_text(json.dumps(script))
        monkeypatch.setenv("SCRIPT", str(self.script_file))
        monkeypatch.setenv("LOG", str(self.log))
        self.config = LocalConfig(agent=AGENT, **config)

    def shell(self, gates: GateMode = GateMode.STOP, ask: Any = None) -> LocalShell:
        return LocalShell(self.folder, self.config, gates, ask=ask)

    def prompts(self) -> dict[str, str]:
        return {path.stem: path.read_text() for path in sorted(self.log.glob("*.txt"))}

    def show(self, ref: str) -> str:
        """``git show REV:PATH``, a run's file named by its logical path read where journal layout v2 puts it."""
        rev, colon, path = ref.partition(":")
        ref = f"{rev}{colon}{sharded(path) or path}" if colon else ref
        return subprocess.run(["git", "show", ref], cwd=self.folder, capture_output=True, text=True, check=True).stdout


def graph_file(name: str) -> Graph:
    return parse_graph(json.loads((ROOT / "graphs" / name).read_text()))
