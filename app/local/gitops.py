"""Git operations of the local shell: the run branch, its worktree, commits, delivery state.

Nothing here touches the user's working tree or current branch: missions run in a worktree of the run
branch under ``.git/interlock/worktrees``. Every command is the ``git`` program in the person's own
environment (``app.gitaccess.on_machine_env``, which says why), and every commit names Interlock
(``app.gitaccess.ON_MACHINE``) as author and committer, so a machine with no git identity works.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from app.engine.errors import InterlockError
from app.engine.events import GitState
from app.gitaccess import ON_MACHINE, GitFailed, branch_state, git_output, on_machine_env, run_git
from app.runner.ignore import excludes_file


@dataclass(frozen=True)
class Repo:
    """A repository, or a worktree of one, on the person's machine: where git runs and where it keeps its
    files (``git_dir`` the worktree's own, ``common_dir`` the branches and objects every worktree shares)."""

    working_dir: Path
    git_dir: Path
    common_dir: Path

    def git(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        return git_in(self.working_dir, *args, env=env)

    def heads(self) -> list[str]:
        listed = self.git("for-each-ref", "--format=%(refname)", "refs/heads/")
        return [line.removeprefix("refs/heads/") for line in listed.splitlines()]


def git_in(folder: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """The output of a git command in ``folder`` that must succeed (``GitFailed`` otherwise), less its last
    newline; in the person's environment unless ``env`` is given."""
    out = git_output(args, folder, on_machine_env() if env is None else env)
    return out.decode("utf-8", errors="replace").removesuffix("\n")


def committing_env() -> dict[str, str]:
    """The person's environment, with Interlock as the author and committer of the commit."""
    return on_machine_env() | ON_MACHINE.env()


class GitProblem(InterlockError):
    """A git precondition failed; ``hint`` says how to fix it."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.hint = hint
        super().__init__(f"{message}{f' ({hint})' if hint else ''}")


def open_repo(path: Path) -> Repo:
    found = find_repo(path)
    if found is None:
        raise GitProblem(f"{path} is not a git repository", "run `git init` there, or pass --repo")
    return found


def find_repo(path: Path) -> Repo | None:
    """The repository whose top folder is ``path`` (or whose git folder, for a bare one); ``None`` for any
    other folder, a folder inside a repository included: the journal belongs to the repository named."""
    if not path.is_dir():
        return None
    asked = ["rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir", "--show-cdup"]
    result = run_git(asked, path, on_machine_env())
    lines = result.stdout.decode("utf-8", errors="replace").split("\n")
    if result.returncode != 0 or len(lines) < 4:
        return None
    bare, git_dir, common = lines[0] == "true", Path(lines[1]), (path / lines[2]).resolve()
    if git_dir == path.resolve():  # a bare repository, or the git folder itself
        return Repo(path.absolute() if bare else git_dir.parent, git_dir, common)
    if lines[3] != "":  # a folder below the top of the working tree
        return None
    return Repo(path.absolute(), git_dir, common)


def create_run_branch(repo: Repo, branch: str, base: str, title: str) -> str:
    """The run branch from ``base`` with an empty start commit (SPEC GH2); returns its head."""
    heads = repo.heads()
    if base not in heads:
        known = ", ".join(heads) or "none"
        raise GitProblem(
            f"base branch {base!r} does not exist in {repo.working_dir}",
            f"create it with `git branch {base}` or pass --base; branches: {known}",
        )
    if branch in heads:
        raise GitProblem(f"branch {branch!r} already exists", "each run gets its own branch")
    tree = repo.git("rev-parse", f"{base}^{{tree}}")
    message = f"interlock: start run branch {branch}\n\n{title}"
    commit = repo.git("commit-tree", tree, "-p", base, "-m", message, env=committing_env())
    repo.git("update-ref", f"refs/heads/{branch}", commit, "0" * 40)
    return commit


def drop_unused_start(repo: Repo, branch: str) -> bool:
    """Delete ``branch`` if it holds nothing but its empty start commit: what a ``run`` killed between making
    the branch and saving the run's first record leaves behind. Called only for a run with no record."""
    if branch not in repo.heads():
        return False
    head = repo.git("rev-parse", "--verify", f"refs/heads/{branch}^{{commit}}")
    headers, _, message = repo.git("cat-file", "commit", head).partition("\n\n")
    fields = [line.split(" ", 1) for line in headers.splitlines()]
    tree = next(value for key, value in fields if key == "tree")
    parents = [value for key, value in fields if key == "parent"]
    start = f"interlock: start run branch {branch}\n"
    if len(parents) != 1 or tree != repo.git("rev-parse", f"{parents[0]}^{{tree}}") or not message.startswith(start):
        return False
    repo.git("update-ref", "-d", f"refs/heads/{branch}", head)
    return True


def worktree(repo: Repo, branch: str, run_id: str) -> Path:
    """The worktree of the run branch, created on first use and reused by every mission."""
    path = Path(repo.git_dir) / "interlock" / "worktrees" / run_id
    if (path / ".git").exists():
        return path
    if path.exists():
        shutil.rmtree(path)
    repo.git("worktree", "prune")
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.git("worktree", "add", "--quiet", str(path), branch)
    return path


def stale_locks(repo: Repo, run_id: str, branch: str) -> list[Path]:
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


def clear_stale_locks(repo: Repo, run_id: str, branch: str) -> list[Path]:
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


def remove_worktree(repo: Repo, run_id: str) -> None:
    path = Path(repo.git_dir) / "interlock" / "worktrees" / run_id
    if path.exists():
        repo.git("worktree", "remove", "--force", str(path))


def head_of(path: Path) -> str:
    return git_in(path, "rev-parse", "HEAD")


def commit_work(path: Path, message: str) -> str | None:
    """Commit everything the agent changed in the worktree, except caches and environments git does not
    track yet (``app/runner/ignore.py``); ``None`` when it changed nothing."""
    tree = open_repo(path)
    tree.git("-c", f"core.excludesFile={excludes_file(tree.git_dir)}", "add", "--all")
    if not tree.git("status", "--porcelain"):
        return None
    tree.git("commit", "--quiet", "--no-verify", "-m", message, env=committing_env())
    return tree.git("rev-parse", "HEAD")


def discard_changes(path: Path) -> None:
    """Put the worktree back to its head: what a call that must not edit (an advisor) or a check (SPEC V7: it
    commits nothing) left is dropped, so the next mission's commit holds only that mission's work. Files git
    ignores — the caches of ``app/runner/ignore.py`` among them — are kept."""
    tree = open_repo(path)
    tree.git("reset", "--hard", "--quiet")
    tree.git("-c", f"core.excludesFile={excludes_file(tree.git_dir)}", "clean", "-fdq")


def commits_between(path: Path, old: str, new: str) -> int:
    if old == new:
        return 0
    return int(git_in(path, "rev-list", "--count", f"{old}..{new}"))


def delivery_state(repo: Repo, branch: str, base: str) -> GitState:
    """What a decision file shows of the delivery: head, commits ahead, files changed, conflicts."""
    return branch_state(repo.working_dir, on_machine_env(), branch, base)


def merged_into_base(repo: Repo, branch: str, base: str) -> str | None:
    """The base's head when the run branch's head is reachable from it — merged, or fast-forwarded — else
    ``None``: not merged yet, merged by squash or rebase (new commits git cannot tie to the branch), or a
    branch that no longer exists. The run branch always holds its start commit, so an untouched branch is
    never taken for a merged one."""
    try:
        head = repo.git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
        base_head = repo.git("rev-parse", "--verify", "--quiet", f"refs/heads/{base}^{{commit}}")
        repo.git("merge-base", "--is-ancestor", head, base_head)
    except GitFailed:
        return None
    return base_head
