"""Git operations of the local shell (GitPython): the run branch, its worktree, commits, delivery state.

Nothing here touches the user's working tree or current branch: missions run in a worktree of the run
branch under ``.git/interlock/worktrees``. Every commit names Interlock as author and committer, so a
machine with no git identity works.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import git

from app.engine.errors import InterlockError
from app.engine.events import GitState
from app.runner.ignore import excludes_file

IDENTITY = {
    "GIT_AUTHOR_NAME": "Interlock",
    "GIT_AUTHOR_EMAIL": "interlock@localhost",
    "GIT_COMMITTER_NAME": "Interlock",
    "GIT_COMMITTER_EMAIL": "interlock@localhost",
}


class GitProblem(InterlockError):
    """A git precondition failed; ``hint`` says how to fix it."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.hint = hint
        super().__init__(f"{message}{f' ({hint})' if hint else ''}")


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitProblem(f"{path} is not a git repository", "run `git init` there, or pass --repo") from None


def create_run_branch(repo: git.Repo, branch: str, base: str, title: str) -> str:
    """The run branch from ``base`` with an empty start commit (SPEC GH2); returns its head."""
    if base not in [head.name for head in repo.heads]:
        known = ", ".join(head.name for head in repo.heads) or "none"
        raise GitProblem(
            f"base branch {base!r} does not exist in {repo.working_dir}",
            f"create it with `git branch {base}` or pass --base; branches: {known}",
        )
    if branch in [head.name for head in repo.heads]:
        raise GitProblem(f"branch {branch!r} already exists", "each run gets its own branch")
    tree = repo.git.rev_parse(f"{base}^{{tree}}")
    with repo.git.custom_environment(**IDENTITY):
        commit = repo.git.commit_tree(tree, "-p", base, "-m", f"interlock: start run branch {branch}\n\n{title}")
    repo.git.update_ref(f"refs/heads/{branch}", commit, "0" * 40)
    return str(commit)


def drop_unused_start(repo: git.Repo, branch: str) -> bool:
    """Delete ``branch`` if it holds nothing but its empty start commit: what a ``run`` killed between making
    the branch and saving the run's first record leaves behind. Called only for a run with no record."""
    if branch not in [head.name for head in repo.heads]:
        return False
    head = repo.heads[branch].commit
    start = f"interlock: start run branch {branch}\n"
    if len(head.parents) != 1 or head.tree != head.parents[0].tree or not str(head.message).startswith(start):
        return False
    repo.git.update_ref("-d", f"refs/heads/{branch}", head.hexsha)
    return True


def worktree(repo: git.Repo, branch: str, run_id: str) -> Path:
    """The worktree of the run branch, created on first use and reused by every mission."""
    path = Path(repo.git_dir) / "interlock" / "worktrees" / run_id
    if (path / ".git").exists():
        return path
    if path.exists():
        shutil.rmtree(path)
    repo.git.worktree("prune")
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.git.worktree("add", "--quiet", str(path), branch)
    return path


def stale_locks(repo: git.Repo, run_id: str, branch: str) -> list[Path]:
    """The lock files git keeps for the run's own worktree (``index.lock``, ``HEAD.lock``...) and its branch.
    Git removes them when its command ends; one still there after a kill -9 of the runner makes every later
    commit of the run fail. Only the runner of this run and its agent write there."""
    found: list[Path] = []
    marker = Path(repo.git_dir) / "interlock" / "worktrees" / run_id / ".git"
    try:
        admin = Path(marker.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip())
        found += sorted(admin.glob("*.lock"))
    except OSError:
        pass  # no worktree yet: nothing of it can be locked
    ref = Path(repo.common_dir) / "refs" / "heads" / f"{branch}.lock"
    return [*found, ref] if ref.is_file() else found


def clear_stale_locks(repo: git.Repo, run_id: str, branch: str) -> list[Path]:
    """Remove the run's stale git locks (``stale_locks``); the caller must hold the run's advisory lock, with
    the agent a dead runner left stopped, so that no live process of the run can own them. A lock that cannot
    be removed stops the run before any agent runs or anything is charged, with the command that fixes it."""
    removed, stuck = [], []
    for lock in stale_locks(repo, run_id, branch):
        try:
            lock.unlink(missing_ok=True)
            removed.append(lock)
        except OSError as exc:
            stuck.append((lock, exc.strerror))
    if stuck:
        named = ", ".join(f"{lock} ({why})" for lock, why in stuck)
        command = " ".join(shlex.quote(str(lock)) for lock, _ in stuck)
        raise GitProblem(
            f"run {run_id} cannot go on: git locks left by a process that died could not be removed: {named}",
            f"remove them with `rm -f {command}`, then run the command again",
        )
    return removed


def remove_worktree(repo: git.Repo, run_id: str) -> None:
    path = Path(repo.git_dir) / "interlock" / "worktrees" / run_id
    if path.exists():
        repo.git.worktree("remove", "--force", str(path))


def head_of(path: Path) -> str:
    return str(git.Repo(path).head.commit.hexsha)


def commit_work(path: Path, message: str) -> str | None:
    """Commit everything the agent changed in the worktree, except caches and environments git does not
    track yet (``app/runner/ignore.py``); ``None`` when it changed nothing."""
    tree = git.Repo(path)
    tree.git.execute(["git", "-c", f"core.excludesFile={excludes_file(Path(tree.git_dir))}", "add", "--all"])
    if not tree.git.status("--porcelain"):
        return None
    with tree.git.custom_environment(**IDENTITY):
        tree.git.commit("--quiet", "--no-verify", "-m", message)
    return str(tree.head.commit.hexsha)


def discard_changes(path: Path) -> None:
    """Put the worktree back to its head: what a call that must not edit (an advisor) or a check (SPEC V7: it
    commits nothing) left is dropped, so the next mission's commit holds only that mission's work. Files git
    ignores — the caches of ``app/runner/ignore.py`` among them — are kept."""
    tree = git.Repo(path)
    tree.git.reset("--hard", "--quiet")
    tree.git.execute(["git", "-c", f"core.excludesFile={excludes_file(Path(tree.git_dir))}", "clean", "-fdq"])


def commits_between(path: Path, old: str, new: str) -> int:
    if old == new:
        return 0
    return int(git.Repo(path).git.rev_list("--count", f"{old}..{new}"))


def delivery_state(repo: git.Repo, branch: str, base: str) -> GitState:
    """What a decision file shows of the delivery: head, commits ahead, files changed, conflicts."""
    try:
        head = repo.git.rev_parse(branch)
        ahead = int(repo.git.rev_list("--count", f"{base}..{branch}"))
        files = tuple(filter(None, repo.git.diff("--name-only", f"{base}...{branch}").splitlines()))
    except git.GitCommandError:
        return GitState()
    return GitState(head=head, ahead=ahead, files_changed=files, conflicts=_conflicts(repo, branch, base))


def merged_into_base(repo: git.Repo, branch: str, base: str) -> str | None:
    """The base's head when the run branch's head is reachable from it — merged, or fast-forwarded — else
    ``None``: not merged yet, merged by squash or rebase (new commits git cannot tie to the branch), or a
    branch that no longer exists. The run branch always holds its start commit, so an untouched branch is
    never taken for a merged one."""
    try:
        head = repo.git.rev_parse("--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
        base_head = repo.git.rev_parse("--verify", "--quiet", f"refs/heads/{base}^{{commit}}")
        repo.git.merge_base("--is-ancestor", head, base_head)
    except git.GitCommandError:
        return None
    return str(base_head)


def _conflicts(repo: git.Repo, branch: str, base: str) -> tuple[str, ...]:
    try:
        repo.git.merge_tree("--write-tree", "--name-only", "--no-messages", base, branch)
        return ()
    except git.GitCommandError as exc:
        if exc.status != 1:
            return ()
        lines = str(exc.stdout).strip().strip("'").splitlines()
        return tuple(line.strip() for line in lines[1:] if line.strip())


def git_env() -> dict[str, str]:
    """Environment for commands run in a worktree: the caller's, with git's prompts switched off."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
