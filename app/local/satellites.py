"""Satellite repositories of a local run (SPEC P4, U7): other repositories on disk where its work may land.

``satellites: [../docs]`` in the ``--config`` file names them, each a folder holding a git repository, relative
to the run's repository. At the start each gets a run branch ``interlock/<run-id>`` from its checked-out head;
every mission gets a worktree of that branch in each (``<satellite>/.git/interlock/worktrees/<run-id>``), named
in its prompt, and Interlock commits what the agent changed there as it does in the run's own worktree. The
mission record lists each satellite's commits, and a new commit in any of them is progress
(``app/runner/outcomes.py``), as on GitHub.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.engine.events import GitState
from app.engine.record import Run
from app.gitaccess import GitFailed
from app.local.gitops import (
    GitProblem,
    Repo,
    commit_work,
    commits_between,
    delivery_state,
    discard_changes,
    find_repo,
    head_of,
    remove_worktree,
    worktree,
)


@dataclass(frozen=True)
class SatelliteTree:
    """One satellite's worktree for a mission, and its head before the mission."""

    path: str  # the satellite repository, as the run records it
    tree: Path
    before: str


def resolve(written: list[str], main: Repo) -> list[str]:
    """The satellites the configuration names, as absolute folders; one that holds no git repository with a
    commit, or that is the run's own repository (its git folder, a linked worktree of it: the same common git
    folder), is refused before anything is made."""
    found: list[str] = []
    for name in written:
        folder = (main.working_dir / name).resolve()
        repo = find_repo(folder)
        if repo is None or not repo.heads():
            raise GitProblem(
                f"the satellite {name} ({folder}) is not a git repository with a commit",
                "create it there, or remove it from `satellites:` in the --config file",
            )
        if repo.common_dir.resolve() == main.common_dir.resolve():
            raise GitProblem(f"the satellite {name} is the run's own repository", "name other repositories")
        found.append(str(folder))
    return found


def make_branches(satellites: list[str], branch: str, owner: Repo) -> None:
    """The run branch in each satellite, from its checked-out head (kept if a killed start of this run made it
    already). Each branch is claimed for the repository whose run made it (a file in the satellite's git folder),
    so that a run of another repository with the same run id is refused instead of landing on it (SPEC U7);
    every satellite is checked before any branch is made."""
    repos = [_repo(path) for path in satellites]
    mine = str(owner.common_dir.resolve())
    for repo in repos:
        claimed = _claim_file(repo, branch)
        holder = claimed.read_text(encoding="utf-8").strip() if claimed.is_file() else None
        if (holder is not None and holder != mine) or (holder is None and branch in repo.heads()):
            raise GitProblem(
                f"the satellite {repo.working_dir} already has a branch {branch} of another run"
                f"{f' (of the repository {holder})' if holder else ''}; nothing was started",
                "start this run with another --run-id",
            )
    for repo in repos:
        claimed = _claim_file(repo, branch)
        claimed.parent.mkdir(parents=True, exist_ok=True)
        claimed.write_text(mine + "\n", encoding="utf-8")  # before the branch: a killed start finds its claim
        if branch not in repo.heads():
            repo.git("branch", branch, "HEAD")


def _claim_file(repo: Repo, branch: str) -> Path:
    return repo.common_dir / "interlock" / "satellite-runs" / branch.replace("/", "%2F")


def check_present(run: Run) -> None:
    """Refuse to drive a run on while one of its satellites is gone (SPEC U7): checked before a person's event
    is applied, so the run stays where it was instead of dispatching a mission that cannot be checked out."""
    for path in run.satellites:
        if find_repo(Path(path)) is None:
            raise GitProblem(
                f"the satellite {path} of run {run.id} is no longer a git repository; nothing was changed",
                f"restore it and type the command again, or `interlock abandon {run.id}`",
            )


def check_out(run: Run) -> list[SatelliteTree]:
    """A worktree of the run branch in each satellite of ``run``, with its head before the mission."""
    trees = []
    for path in run.satellites:
        tree = worktree(_repo(path), run.branch, run.id)
        trees.append(SatelliteTree(path, tree, head_of(tree)))
    return trees


def prompt_note(run: Run, trees: list[SatelliteTree]) -> str:
    """What the agent is told: where each satellite's worktree is, and that its changes there count."""
    if not trees:
        return ""
    lines = [f"- {item.path}: {item.tree}" for item in trees]
    return (
        "\n\n## Satellite repositories\nThis run's work may also land in these repositories, checked out on "
        f"their run branch `{run.branch}`; change files there as needed (Interlock commits them):\n" + "\n".join(lines)
    )


def commit(trees: list[SatelliteTree], message: str) -> dict[str, dict[str, Any]]:
    """Commit what the agent changed in each satellite: the record's ``satellites`` (heads and commits)."""
    landed: dict[str, dict[str, Any]] = {}
    for item in trees:
        commit_work(item.tree, message)
        after = head_of(item.tree)
        landed[item.path] = {
            "base": item.before,
            "head": after,
            "commits": commits_between(item.tree, item.before, after),
        }
    return landed


def discard(trees: list[SatelliteTree]) -> None:
    """A check commits nothing anywhere (SPEC V7)."""
    for item in trees:
        discard_changes(item.tree)


def with_state(git: GitState, run: Run) -> GitState:
    """The delivery's git state with each satellite's: its run branch against the head it was made from (the
    branch its folder has checked out), for the decision file (SPEC E2, U7)."""
    found = tuple((path, delivery_state(_repo(path), run.branch, "HEAD")) for path in run.satellites)
    return replace(git, satellites=found) if found else git


def merged(run: Run) -> bool:
    """Whether every satellite's run branch is merged into the branch its folder has checked out (SPEC U7: the
    run is done only when all are merged). A satellite the run never changed has nothing to merge."""
    for path in run.satellites:
        try:
            _repo(path).git("merge-base", "--is-ancestor", f"refs/heads/{run.branch}", "HEAD")
        except (GitFailed, GitProblem):
            return False
    return True


def remove_worktrees(run: Run) -> None:
    """The satellites' worktrees of a run that is done."""
    for path in run.satellites:
        repo = find_repo(Path(path))
        if repo is not None:
            remove_worktree(repo, run.id)


def _repo(path: str) -> Repo:
    repo = find_repo(Path(path))
    if repo is None:
        raise GitProblem(f"the satellite {path} is no longer a git repository", "restore it, or abandon the run")
    return repo
