"""What a local run commits (SPEC V7, GH2): an agent's work without the caches its tools leave, and nothing
for a check — in a repository that has no ``.gitignore``, where git alone would commit them all."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.runner.ignore import IGNORED
from tests.helpers import doc, edge, graph, node
from tests.local.harness import Bench

CHECKED = parse_graph(
    graph(
        [node("work"), node("test", "testing", check=f"{sys.executable} -m pytest -q --junitxml=junit.xml")],
        [edge("work", "PASS", "test"), edge("test", "PASS", "__end__"), edge("test", "FAIL", "work")],
        entry="work",
    )
)
CACHES = {
    "__pycache__/app.cpython-311.pyc": "bytecode",
    "pkg/__pycache__/mod.cpython-311.pyc": "bytecode",
    "pkg/mod.pyc": "bytecode",
    ".venv/bin/python": "a virtual environment",
    ".mypy_cache/3.11/app.json": "{}",
    "node_modules/left-pad/index.js": "module.exports = 1",
    "pkg/lib.egg-info/PKG-INFO": "Name: lib",
}
WORK = {
    "answer": "Added app.py with its test.",
    "write": {
        "app.py": "def add(a, b):\n    return a + b\n",
        "test_app.py": "from app import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        "tracked.pyc": "changed by the agent",  # tracked already: committed like any file
        **CACHES,
    },
}


def files_on(bench: Bench, ref: str) -> set[str]:
    return set(bench.repo.git.ls_tree("-r", "--name-only", ref).splitlines())


def test_a_local_run_commits_the_agents_work_but_no_cache_and_nothing_for_a_check(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC V7, GH2: a check commits nothing; a mission never commits caches the repository does not track
    bench = Bench(tmp_path, {"work": WORK}, monkeypatch)
    (bench.folder / "tracked.pyc").write_text("tracked on purpose")
    bench.repo.git.add("--force", "tracked.pyc")
    bench.repo.git.commit("-m", "a compiled file the project tracks", author="Someone <s@example.com>")
    bench.repo.git.branch("-f", "develop", "main")
    assert not (bench.folder / ".gitignore").exists()
    run = bench.shell().start(CHECKED, "Add add()", "")
    assert run.status is Status.AWAITING_MERGE, run.reason
    tree = bench.folder / ".git" / "interlock" / "worktrees" / run.id
    assert (tree / ".pytest_cache").is_dir() and (tree / "__pycache__").is_dir()  # pytest really ran there
    assert not (tree / "junit.xml").exists()  # the check's report is not the next mission's work either
    assert files_on(bench, run.branch) == {"README.md", "tracked.pyc", "app.py", "test_app.py"}
    assert bench.repo.git.show(f"{run.branch}:tracked.pyc") == "changed by the agent"
    subjects = bench.repo.git.log("--format=%s", f"develop..{run.branch}").splitlines()
    assert [s for s in subjects if "mission" in s] == [f"interlock({run.id}): work mission #1 (deliver)"]


def test_the_readme_lists_the_ignore_list_of_the_code() -> None:
    text = " ".join(doc("local/running.md", "github/action.md").split())
    start = text.index("unless the repository already tracks them:")
    listed = re.findall(r"`([^`]+)`", text[start : text.index(" — the cache", start)])
    assert tuple(listed) == IGNORED
