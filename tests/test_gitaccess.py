"""One way to drive git for each job, one place for the git identity, one for the journal's paths (issue 12).

The rules are read from the source, as syntax trees, so that a third way of driving git, another copy of the
identity or a journal path spelt out by hand elsewhere fails here rather than waiting for a reader to spot it.
Why each job uses what it uses is written once, in ``app/gitaccess.py``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from app.gitaccess import ON_GITHUB, ON_MACHINE, git_output, isolated_env, on_machine_env, run_git
from app.local.gitops import create_run_branch, find_repo, open_repo
from app.store.gitstore import GitStore
from tests.engine.driver import Driver, loop_graph
from tests.helpers import ROOT
from tests.local.harness import make_repo

JOURNAL_LAYOUT = "app/store/journal.py"
# A journal path or the state branch inside a string: `runs/…` (not GitHub's `/actions/runs/`), a file or folder
# of a run's, the board.
JOURNAL_TEXT = re.compile(
    r"(?<![\w/])runs/|^runs$|/missions/|/orders/|decision\.md|graph\.json|board\.md|interlock/state"
)


def app_modules() -> dict[str, ast.Module]:
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / "app").rglob("*.py"))
    }


def imported(tree: ast.Module) -> set[str]:
    """The top-level names of the modules ``tree`` imports, wherever the import stands."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def strings(tree: ast.Module) -> list[tuple[int, str]]:
    """Every string constant of ``tree`` (the literal parts of f-strings too), docstrings left out."""
    docstrings = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_each_way_of_driving_git_keeps_to_its_job() -> None:
    # GitPython ran the same git program as app/gitaccess.run_git does, with its own rules for the environment:
    # the product no longer uses it; the library, pygit2, serves the journal store alone (its writer, its reader,
    # its tree cache and the v1 → v2 layout migration)
    modules = app_modules()
    assert [path for path, tree in modules.items() if "git" in imported(tree)] == []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert [dep for dep in project["dependencies"] if dep.lower().startswith("gitpython")] == []
    users = sorted(path for path, tree in modules.items() if "pygit2" in imported(tree))
    assert users == [
        "app/store/archive_git.py",
        "app/store/gitstore.py",
        "app/store/gitstore_read.py",
        "app/store/packwriter.py",
        "app/store/reshard.py",
        "app/store/treecache.py",
    ]


def test_the_git_program_is_started_in_one_place() -> None:
    # every `git …` command line goes through app.gitaccess.run_git, which is handed the environment that
    # decides whose hooks and configuration apply
    started = [
        f"{path}:{node.lineno}"
        for path, tree in app_modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.List | ast.Tuple)
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "git"
    ]
    assert started and {place.split(":")[0] for place in started} == {"app/gitaccess.py"}


def test_the_git_identity_is_written_down_once() -> None:
    spelt = [
        f"{path}:{line}"
        for path, tree in app_modules().items()
        for line, text in strings(tree)
        if "interlock@" in text.lower()
    ]
    assert spelt and {place.split(":")[0] for place in spelt} == {"app/gitaccess.py"}


def test_journal_paths_are_spelt_out_only_in_the_journal_layout() -> None:
    spelt = [
        f"{path}:{line}: {text!r}"
        for path, tree in app_modules().items()
        if path != JOURNAL_LAYOUT
        for line, text in strings(tree)
        if JOURNAL_TEXT.search(text)
    ]
    assert spelt == []


def author_of(repo: Path, ref: str) -> str:
    shown = subprocess.run(
        ["git", "log", "-1", "--format=%an <%ae>|%cn <%ce>", ref], cwd=repo, capture_output=True, text=True, check=True
    )
    return shown.stdout.strip()


def test_commits_made_on_a_machine_name_the_machine_identity(tmp_path: Path) -> None:
    make_repo(tmp_path)
    create_run_branch(open_repo(tmp_path), "interlock/r1", "develop", "title")
    driver = Driver(loop_graph())
    GitStore(tmp_path).save(driver.run, None)
    machine = f"{ON_MACHINE.name} <{ON_MACHINE.email}>"
    assert author_of(tmp_path, "interlock/r1") == author_of(tmp_path, "interlock/state") == f"{machine}|{machine}"
    assert ON_MACHINE.email != ON_GITHUB.email and ON_MACHINE.name == ON_GITHUB.name


def test_a_repository_is_its_top_folder_and_nothing_below_it(tmp_path: Path) -> None:
    # the journal belongs to the repository named by --repo: a folder inside it is refused, a linked
    # worktree or a bare repository is a repository of its own
    make_repo(tmp_path / "main")
    (tmp_path / "main" / "sub").mkdir()
    subprocess.run(["git", "-C", str(tmp_path / "main"), "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    main, linked = find_repo(tmp_path / "main"), find_repo(tmp_path / "wt")
    assert main is not None and main.git_dir == main.common_dir == (tmp_path / "main" / ".git").resolve()
    assert linked is not None and linked.common_dir == main.git_dir and linked.git_dir != main.git_dir
    assert find_repo(tmp_path / "main" / "sub") is None and find_repo(tmp_path / "missing") is None
    bare = find_repo(tmp_path / "bare.git")
    assert bare is not None and bare.git_dir == (tmp_path / "bare.git").resolve()


def test_whose_configuration_and_hooks_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # on a person's machine their own configuration and hooks apply; in an Actions job (isolated_env) neither
    # the global configuration nor a hook the checkout holds does
    make_repo(tmp_path / "repo")
    (tmp_path / "global").write_text("[interlock]\n\tprobe = mine\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global"))
    hook = tmp_path / "repo" / ".git" / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    repo = tmp_path / "repo"
    machine, job = on_machine_env() | ON_MACHINE.env(), isolated_env(ON_GITHUB)
    assert git_output(["config", "interlock.probe"], repo, machine) == b"mine\n"
    assert run_git(["config", "interlock.probe"], repo, job).returncode == 1
    git_output(["commit", "--quiet", "--allow-empty", "-m", "in the job"], repo, job)
    assert not (tmp_path / "hook-ran").exists() and author_of(repo, "HEAD").startswith(f"Interlock <{ON_GITHUB.email}>")
    git_output(["commit", "--quiet", "--allow-empty", "-m", "on the machine"], repo, machine)
    assert (tmp_path / "hook-ran").read_text() == "ran\n"
