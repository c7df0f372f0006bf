"""Checks made before a run starts, so that a problem costs nothing: no run branch, no journal, no attempt.

``interlock run`` calls these before creating anything and refuses with every problem at once; the
continuing commands check the calls part (agents and check programs) before driving a run on;
``interlock doctor`` runs them all on demand. Each finding says how to fix what it found.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from app.engine.findings import Finding, FindingCode, error, ok, warning
from app.engine.graph.model import Graph
from app.gitaccess import GitFailed, on_machine_env, run_git
from app.local.agentcheck import agent_findings, check_findings
from app.local.config import LocalConfig
from app.local.gitops import Repo, find_repo
from app.local.programs import TreeMode

MIN_GIT = (2, 5)  # `git worktree`: every mission runs in a worktree of the run branch
CONFLICT_GIT = (2, 38)  # `git merge-tree --write-tree`: how a delivery is checked against the base (SPEC V9)


@dataclass
class Calls:
    """What a run will call: agent specs and check lines, each with who needs it (for the messages)."""

    agents: dict[str, list[str]] = field(default_factory=dict)  # spec -> "stage build", "decide", "advisor"
    checks: dict[str, list[str]] = field(default_factory=dict)  # shell line -> "feature: tests"

    def need_agent(self, spec: str | None, who: str) -> None:
        if spec is not None:
            self.agents.setdefault(spec, []).append(who)

    def need_check(self, line: str, who: str) -> None:
        self.checks.setdefault(line, []).append(who)


def calls_of_graph(settings: LocalConfig, graph: Graph) -> Calls:
    """The agents and checks a run of ``graph`` calls with ``settings``: missions' roles, decisions, advice."""
    calls = Calls()
    for node in graph.nodes:
        if node.check is not None:
            calls.need_check(node.check, f"stage {node.stage}")
            continue
        role = settings.team.assignee(node.capability) if settings.team else None
        calls.need_agent(role.agent if role and role.agent else settings.agent, f"stage {node.stage}")
    if any(node.decides for node in graph.nodes):
        calls.need_agent(settings.decide or settings.agent, "decisions")
    calls.need_agent(settings.advisor, "advisor")
    return calls


def calls_of_roster(settings: LocalConfig, graphs: Iterable[tuple[str, Graph]] = ()) -> Calls:
    """Every agent the configuration names (default, each role's, decisions, advisor), and every check line
    of ``graphs``: what ``doctor`` checks when no particular run is meant."""
    calls = Calls()
    calls.need_agent(settings.agent, "default agent")
    for role in settings.team.roles if settings.team else []:
        calls.need_agent(role.agent, f"role {role.name}")
    calls.need_agent(settings.decide, "decisions")
    calls.need_agent(settings.advisor, "advisor")
    for name, graph in graphs:
        for node in graph.nodes:
            if node.check is not None:
                calls.need_check(node.check, f"{name}: {node.stage}")
    return calls


def calls_findings(calls: Calls, repo: Repo | None, ref: str, checks_as_warnings: bool = False) -> list[Finding]:
    """Every agent resolvable and every check's programs present, looked up as the run will: a relative
    program in ``ref`` (the tree the mission's worktree will hold)."""
    tree_mode = _tree_mode(repo, ref) if repo is not None and _resolves(repo, ref) else None
    workdir = Path(repo.working_dir) if repo is not None else Path.cwd()
    found: list[Finding] = []
    for spec, users in calls.agents.items():
        found += agent_findings(spec, _subject(f"agent {spec}", users), workdir, tree_mode)
    for line, users in calls.checks.items():
        results = check_findings(line, _subject(f"check `{line}`", users), workdir, tree_mode)
        if checks_as_warnings:
            results = [_softened(finding) for finding in results]
        found += results
    return found


def git_findings() -> list[Finding]:
    """git installed, and recent enough for what runs use."""
    try:
        out = run_git(["--version"], None, on_machine_env(), timeout_s=30).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [error(FindingCode.GIT_VERSION, "git", f"git cannot be run ({exc})", "install git 2.38 or newer")]
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if match is None:
        return [warning(FindingCode.GIT_VERSION, "git", f"cannot read the version in {out.strip()!r}", "")]
    version = (int(match[1]), int(match[2]))
    shown = match.group(0)
    if version < MIN_GIT:
        return [
            error(
                FindingCode.GIT_VERSION,
                "git",
                f"git {shown} has no `git worktree`, in which every mission runs",
                "install git 2.38 or newer",
            )
        ]
    if version < CONFLICT_GIT:
        return [
            warning(
                FindingCode.GIT_VERSION,
                "git",
                f"git {shown} has no `git merge-tree --write-tree`: conflicts with the base go undetected",
                "install git 2.38 or newer",
            )
        ]
    return [ok(FindingCode.GIT_VERSION, "git", f"version {shown}")]


def repository_findings(path: Path) -> tuple[list[Finding], Repo | None]:
    repo = find_repo(path)
    if repo is None:
        fix = "run `git init` there, or pass --repo with the repository's folder"
        return [error(FindingCode.GIT_REPOSITORY, str(path), f"{path} is not a git repository", fix)], None
    return [ok(FindingCode.GIT_REPOSITORY, str(path), "a git repository")], repo


def base_findings(repo: Repo, base: str) -> list[Finding]:
    heads = repo.heads()
    subject = f"base branch {base}"
    if base in heads:
        return [ok(FindingCode.BASE_BRANCH, subject, f"exists at {repo.git('rev-parse', f'refs/heads/{base}')[:12]}")]
    known = ", ".join(heads) or "none"
    return [
        error(
            FindingCode.BASE_BRANCH,
            subject,
            f"base branch {base!r} does not exist in {repo.working_dir}",
            f"create it with `git branch {base}`, or pass --base (or set `base:` in the config); branches: {known}",
        )
    ]


def run_findings(path: Path, settings: LocalConfig, calls: Calls) -> list[Finding]:
    """Everything a run with ``settings`` needs: git, the repository, its base branch, and ``calls``."""
    found = git_findings()
    repo_found, repo = repository_findings(path)
    found += repo_found
    if repo is not None:
        found += base_findings(repo, settings.base)
    return found + calls_findings(calls, repo, settings.base)


def _tree_mode(repo: Repo, base: str) -> TreeMode:
    """The git file mode of a path in ``base`` (what a mission's worktree will hold), ``None`` if absent."""

    def mode(path: str) -> str | None:
        try:
            line = repo.git("ls-tree", base, "--", path)
        except GitFailed:
            return None
        return line.split()[0] if line else None

    return mode


def _resolves(repo: Repo, ref: str) -> bool:
    try:
        repo.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except GitFailed:
        return False
    return True


def _subject(what: str, users: list[str]) -> str:
    """``agent claude (stages plan, build; decisions)``: who needs the thing checked."""
    stages = [user.removeprefix("stage ") for user in users if user.startswith("stage ")]
    others = [user for user in users if not user.startswith("stage ")]
    named = ([f"stage{'s' if len(stages) > 1 else ''} {', '.join(stages)}"] if stages else []) + others
    return f"{what} ({'; '.join(named)})"


def _softened(finding: Finding) -> Finding:
    """An error about a graph nobody asked to run is a warning: it matters only if that graph is used."""
    if not finding.is_error:
        return finding
    return warning(finding.code, finding.subject, finding.message, finding.fix)
