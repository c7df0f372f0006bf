"""Satellite repositories of a local run (SPEC P4, U7; issue 13 items 7 and 8): repositories on disk named by the
``--config`` file, a run branch in each, a worktree of it in every mission's prompt, and their commits as progress."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.local.gitops import GitProblem
from app.store.journal import decision_path
from tests.helpers import edge, graph, node
from tests.local.harness import Bench, make_repo

ONE = parse_graph(
    graph([node("build", requiresChanges=True, maxVisits=2)], [edge("build", "PASS", "__end__")], entry="build")
)
RUN = "r1"
UP = os.pardir + os.sep  # a satellite beside the run's repository: its folder is named relative to it


def bench_with_docs(tmp_path: Path, monkeypatch: Any, write: bool = True) -> tuple[Bench, Path]:
    docs = tmp_path / "docs"
    make_repo(docs)
    tree = docs / ".git" / "interlock" / "worktrees" / RUN
    step = {
        "answer": "Wrote the guide.\nVERDICT: PASS",
        "write": {str(tree / "guide.md"): "# guide\n"} if write else {},
    }
    return Bench(tmp_path, {"build": step}, monkeypatch, satellites=[UP + "docs"]), docs


def git_in(folder: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()


def test_a_commit_in_a_satellite_on_disk_is_progress_and_lands_on_its_run_branch(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC U7, P4: the mission sees the satellite's worktree; its commit there meets requiresChanges
    bench, docs = bench_with_docs(tmp_path, monkeypatch)
    run = bench.shell().start(ONE, "Write the guide", "", run_id=RUN)
    assert run.status is Status.AWAITING_MERGE, run.reason
    assert run.satellites == [str(docs.resolve())]
    assert git_in(docs, "show", f"interlock/{RUN}:guide.md") == "# guide"
    assert git_in(docs, "log", "-1", "--format=%s", f"interlock/{RUN}").startswith(f"interlock({RUN}): build")
    assert git_in(docs, "rev-parse", "main") == git_in(docs, "rev-parse", f"interlock/{RUN}~1")  # from its head
    prompt = next(iter(bench.prompts().values()))
    assert f"- {docs.resolve()}: {docs.resolve() / '.git' / 'interlock' / 'worktrees' / RUN}" in prompt
    main_subjects = git_in(bench.folder, "log", "--format=%s", f"develop..interlock/{RUN}").splitlines()
    assert not any("mission" in subject for subject in main_subjects)  # nothing changed in the run's repository


def test_no_commit_in_the_repository_nor_its_satellite_is_no_progress(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC P4: the node is re-entered until its visits run out
    bench, docs = bench_with_docs(tmp_path, monkeypatch, write=False)
    run = bench.shell().start(ONE, "Write the guide", "", run_id=RUN)
    assert run.status is Status.ESCALATED and run.visits["build"] > 1
    decision = git_in(bench.folder, "show", f"interlock/state:{decision_path(RUN)}")
    assert f"- satellite `{docs.resolve()}`: head `" in decision and "files changed: none" in decision  # SPEC E2


def test_a_satellite_that_is_no_repository_starts_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, {}, monkeypatch, satellites=[UP + "nowhere"])
    with pytest.raises(GitProblem, match=r"the satellite \.\./nowhere .* is not a git repository"):
        bench.shell().start(ONE, "Write the guide", "", run_id=RUN)
    assert f"interlock/{RUN}" not in git_in(bench.folder, "branch", "--list")


def test_a_local_run_is_done_only_when_its_satellite_branch_is_merged_too(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC U7, GH6 on disk: the run branch merged into the base is not enough while a satellite's is not
    bench, docs = bench_with_docs(tmp_path, monkeypatch)
    shell = bench.shell()
    run = shell.start(ONE, "Write the guide", "", run_id=RUN)
    assert run.status is Status.AWAITING_MERGE, run.reason
    git_in(bench.folder, "branch", "-f", "develop", f"interlock/{RUN}")  # the run's own branch merged
    assert shell.notice_merge(shell.store.load(RUN)).status is Status.AWAITING_MERGE
    git_in(docs, "merge", "--quiet", "--ff-only", f"interlock/{RUN}")  # then the satellite's
    assert shell.notice_merge(shell.store.load(RUN)).status is Status.DONE
    assert not (docs / ".git" / "interlock" / "worktrees" / RUN).exists()
