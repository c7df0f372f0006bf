"""``interlock demo``: the whole product on a fresh machine in seconds, with no network.

It makes a repository with a ``develop`` branch, runs the feature graph of the library with the built-in
scripted agent (which really edits files: one review FAIL, then PASS; the plan's gate passed on
autopilot), and prints the journey, the money table and the graph picture.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from app.engine.graph.mermaid import draw_mermaid
from app.gitaccess import ON_MACHINE, git_output, on_machine_env
from app.graphset import find_graph
from app.local.config import GateMode, LocalConfig
from app.local.progress import Progress
from app.local.reports import journey_rows, money_rows, render_journey, render_money, render_status
from app.local.shell import LocalShell
from app.store.journal import STATE_BRANCH, record_path

REQUEST_TITLE = "Add a greeting function"
REQUEST_BODY = "We need greet(name) that says hello, with unit tests."


def make_demo_repo(folder: Path) -> None:
    env = on_machine_env() | ON_MACHINE.env()

    def git(*args: str) -> None:
        git_output(args, folder, env)

    folder.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--initial-branch", "main")
    (folder / "README.md").write_text("# demo\n\nA repository made by `interlock demo`.\n", encoding="utf-8")
    git("add", "README.md")
    git("commit", "--quiet", "-m", "Initial commit")
    git("branch", "develop")


def run_demo(library: list[Path], keep: Path | None = None) -> str:
    folder = keep or Path(tempfile.mkdtemp(prefix="interlock-demo-"))
    make_demo_repo(folder)
    os.environ["INTERLOCK_TEST_COMMAND"] = f"{sys.executable} -m unittest discover -q"
    graph = find_graph("feature", library)
    shell = LocalShell(folder, LocalConfig(agent="demo", base="develop"), GateMode.APPROVE, Progress())
    run = shell.start(graph, REQUEST_TITLE, REQUEST_BODY)
    parts = [
        render_status(run, graph),
        "## Journey\n" + render_journey(journey_rows(run, shell.store)),
        "## Money\n" + render_money(money_rows(run)),
        "## Graph\n```mermaid\n" + draw_mermaid(graph, run.stage, run.visits) + "```",
        f"The repository is {folder}: `git -C {folder} log --oneline {run.branch}` shows the agent's commits, "
        f"`git -C {folder} show {STATE_BRANCH}:{record_path(run.id)}` the journal.",
    ]
    return "\n\n".join(parts) + "\n"
