"""How Interlock drives git, one way for each job, and the identity its commits carry.

- **The journal store** (``app/store/gitstore.py``, ``app/store/packwriter.py``) uses a library, pygit2,
  in process: a save lies on the path of every transition, and a git process per read or write would cost
  more than the rest of the save. It touches no working tree, index or hook, so there is no configuration to
  honour. It runs the git program only for what libgit2 cannot do: a compare-and-swap of a branch kept in a
  reftable, and merging the packs saves leave (``repack``, ``gc``) in the background.
- **Everything that touches a working tree** — the run branch, its worktree, the agents' commits, the
  delivery state (``app/local/gitops.py``), the Actions job's fetch, commit and push
  (``app/runner/remote.py``) — runs the ``git`` program, through ``run_git`` below, with an environment
  built here. It is the git the person has (worktrees, ``merge-tree``, pushes with credentials), and its
  environment says whose hooks and configuration apply:
  ``on_machine_env``: on a person's machine, in their own repository, their configuration applies (ignore
  files, line endings, ``safe.directory``), as for their own commits; a commit skips the pre-commit and
  commit-msg hooks (``--no-verify``), so a hook cannot refuse an agent's work half-way through a run.
  ``isolated_env``: in an Actions job the checkout is the agent's, so neither the global or system
  configuration nor any hook or filesystem monitor applies: nothing an agent wrote runs with the token.
  Messages are git's English ones in both (some are read), and git never prompts.

GitPython was a third way: a wrapper that runs the same ``git`` program with its own rules for the
environment. The product no longer depends on it; the tests still use it to set up their repositories.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.engine.errors import InterlockError
from app.engine.events import GitState


@dataclass(frozen=True)
class Identity:
    """The author and committer of every commit Interlock makes: set on each commit, since a fresh machine
    or runner has no git identity of its own."""

    name: str
    email: str

    def env(self) -> dict[str, str]:
        """The identity as the variables the ``git`` program reads."""
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }


# Two addresses, because commits land in two places. Commits made on GitHub — pushed by an Actions job,
# written through the API — use the noreply address GitHub gives commits; commits made on a person's machine —
# a local run's branch, the local journal — use an address that names no host, since they may never leave it.
ON_GITHUB = Identity("Interlock", "interlock@users.noreply.github.com")
ON_MACHINE = Identity("Interlock", "interlock@localhost")

ISOLATED_CONFIG = (("core.hooksPath", "/dev/null"), ("core.fsmonitor", "false"))
ENGLISH = {"LANGUAGE": "C", "LC_ALL": "C"}  # git's own messages are parsed


class GitFailed(InterlockError):
    """A ``git`` command ended with a non-zero status; its output is kept for the caller to read."""

    def __init__(self, args: Sequence[str], status: int, stdout: bytes, stderr: bytes) -> None:
        self.status = status
        self.stdout = stdout.decode("utf-8", errors="replace")
        self.stderr = stderr.decode("utf-8", errors="replace")
        super().__init__(f"git {args[0] if args else ''} failed: {self.stderr.strip()[:500]}")


def on_machine_env() -> dict[str, str]:
    """The environment of git in a person's own repository: theirs, with English messages and no prompts."""
    return {**os.environ, **ENGLISH, "GIT_TERMINAL_PROMPT": "0"}


def isolated_env(identity: Identity, config: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """The environment of git in a checkout an agent could have written: no ``GIT_*`` variable of the caller,
    no global or system configuration, hooks and filesystem monitor off, and ``config`` (the token's header)
    passed in ``GIT_CONFIG_*`` variables, which neither ``.git/config`` nor a process listing shows."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env |= identity.env() | ENGLISH
    env |= {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    pairs = [*ISOLATED_CONFIG, *config]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for index, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def run_git(
    args: Sequence[str],
    cwd: Path | None,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    timeout_s: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """The ``git`` program with ``args`` in ``cwd``, its output captured; the caller reads the status."""
    command = ["git", *args]
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, env=dict(env), timeout=timeout_s)


def git_output(args: Sequence[str], cwd: Path | None, env: Mapping[str, str], stdin: bytes | None = None) -> bytes:
    """The standard output of a ``git`` command that must succeed; ``GitFailed`` when it does not."""
    result = run_git(args, cwd, env, stdin)
    if result.returncode != 0:
        raise GitFailed(args, result.returncode, result.stdout, result.stderr)
    return result.stdout


def branch_state(cwd: Path, env: Mapping[str, str], branch: str, base: str) -> GitState:
    """What a decision file shows of a delivery (SPEC E2): ``branch``'s head, its commits missing from ``base``,
    the files it changes against their merge base, and the files a merge into ``base`` would conflict in.
    The same on a person's machine and in an Actions job; an unreadable branch is an empty state."""

    def text(*args: str) -> str:
        return git_output(args, cwd, env).decode("utf-8", errors="replace")

    try:
        head = text("rev-parse", branch).strip()
        ahead = int(text("rev-list", "--count", f"{base}..{branch}"))
        files = tuple(filter(None, text("diff", "--name-only", f"{base}...{branch}").splitlines()))
    except GitFailed:
        return GitState()
    return GitState(head=head, ahead=ahead, files_changed=files, conflicts=_conflicts(cwd, env, branch, base))


def _conflicts(cwd: Path, env: Mapping[str, str], branch: str, base: str) -> tuple[str, ...]:
    """The files a merge of ``branch`` into ``base`` conflicts in, by ``git merge-tree`` (no worktree touched)."""
    try:
        git_output(["merge-tree", "--write-tree", "--name-only", "--no-messages", base, branch], cwd, env)
        return ()
    except GitFailed as exc:
        if exc.status != 1:
            return ()
        lines = exc.stdout.strip().splitlines()
        return tuple(line.strip() for line in lines[1:] if line.strip())
