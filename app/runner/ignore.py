"""What a mission never commits: caches and environments that tools leave in a working tree.

A repository without a ``.gitignore`` would otherwise get ``__pycache__/`` or ``node_modules/`` committed
by the first agent that runs its tests. The patterns are the cache and environment entries of GitHub's own
``Python.gitignore`` and ``Node.gitignore`` templates (https://github.com/github/gitignore); build output
(``build/``, ``dist/``) is left out on purpose, since some repositories keep sources under those names.

They are handed to git as ``core.excludesFile`` for the commit, so git's own rules apply: a pattern only
hides files git does not track yet — a file the repository already tracks is committed as usual — and the
repository's ``.gitignore`` and ``info/exclude`` still count. A person's own global excludes file is kept
(its lines come first), since ``core.excludesFile`` names a single file.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.gitaccess import on_machine_env, run_git

PYTHON = (
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    ".venv/",
    "*.egg-info/",
    ".eggs/",
    ".coverage",
    "htmlcov/",
)
NODE = (
    "node_modules/",
    ".npm/",
    ".pnpm-store/",
    ".yarn/cache/",
    ".eslintcache",
    ".parcel-cache/",
)
IGNORED = (*PYTHON, *NODE)
FILE_NAME = "interlock-excludes"


def excludes_file(git_dir: Path, env: dict[str, str] | None = None) -> Path:
    """Write the patterns (after the person's own global excludes, if any) into ``git_dir`` and return the
    file, for ``git -c core.excludesFile=<file> add``. Inside the git directory it is never committed."""
    own = _global_excludes(git_dir, env)
    lines = [*own, "# Interlock: caches and environments a mission never commits (app/runner/ignore.py)"]
    lines += [anywhere(pattern) for pattern in IGNORED]
    path = git_dir / FILE_NAME
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def anywhere(pattern: str) -> str:
    """The pattern at any depth. Git anchors a pattern with a slash before its end to the top of the tree, so
    ``.yarn/cache/`` alone would miss the cache of a package in a monorepo; ``**/`` lets it match anywhere,
    as the patterns without such a slash do by themselves."""
    return f"**/{pattern}" if "/" in pattern.rstrip("/") else pattern


def _global_excludes(git_dir: Path, env: dict[str, str] | None) -> list[str]:
    """The lines of the excludes file git would use by itself: the global ``core.excludesFile``, else
    ``$XDG_CONFIG_HOME/git/ignore`` (``~/.config/git/ignore``). A repository's own configuration is not
    read: in a job, an agent could have written it."""
    asked = ["--git-dir", str(git_dir), "config", "--global", "--path", "core.excludesFile"]
    found = run_git(asked, None, on_machine_env() if env is None else env)
    source = os.environ if env is None else env
    named = found.stdout.decode(errors="replace").strip()
    if found.returncode == 0 and named:
        path = Path(named)
    elif source.get("GIT_CONFIG_GLOBAL") == "/dev/null":
        return []
    else:
        config_home = source.get("XDG_CONFIG_HOME") or str(Path(source.get("HOME", "~")).expanduser() / ".config")
        path = Path(config_home) / "git" / "ignore"
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
