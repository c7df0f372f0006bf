"""What a run's start makes on GitHub before its Start is recorded (SPEC GH1, GH2), and the terms the Start takes.

Apart from the GitHub shell (``app/webhooks/shell.py``, whose ``start`` calls these in order): the run branch
with its empty start commit, and the comment that becomes the run's status comment, are each made so that a start
whose delivery failed halfway and is redelivered finds them and goes on there, rather than making them twice.
"""

from __future__ import annotations

from typing import TypedDict

from app.engine.errors import InterlockError
from app.engine.graph.model import Policy
from app.github.client import GitHubError, Installation
from app.github.config import CONFIG_PATH, RepoConfig
from app.github.teams import TeamSettings


class BaseBranchMissing(InterlockError):
    """The configured base branch does not exist: bad configuration, not a failure to reach GitHub. Raised
    before anything is made, so the start is refused whole and the issue told how to fix it (issue 11, 6)."""


class TeamTerms(TypedDict):
    """What a run's Start takes from the repository's configuration and the run's team."""

    base: str
    policy: Policy | None
    autopilot: bool
    separate_duties: bool
    team: str
    satellites: tuple[str, ...]
    advisor: bool


def team_terms(config: RepoConfig, team: TeamSettings) -> TeamTerms:
    """The terms of a run's Start that the configuration and its team set, settled once at start."""
    return TeamTerms(
        base=config.base,
        policy=config.policy,
        autopilot=team.autopilot,
        separate_duties=team.separate_duties,  # SPEC H6
        team="" if team.implicit else team.name,
        satellites=tuple(team.satellites),
        advisor=bool(config.advisor),
    )


def create_run_branch(api: Installation, repo: str, branch: str, base: str, title: str) -> bool:
    """Make the run branch; ``False`` when it exists already: a start whose delivery failed after making
    it, before the run was saved (the caller found no run), made it, and the redelivery goes on there."""
    head = api.ref(repo, base)
    if head is None:
        raise BaseBranchMissing(
            f"the base branch `{base}` does not exist in {repo}: create it, or set `base:` in {CONFIG_PATH}"
        )
    tree = api.commit_tree(repo, head)
    start = api.commit(repo, f"interlock: start {branch}\n\n{title}", tree, [head])
    try:
        api.create_ref(repo, branch, start)
    except GitHubError as exc:
        if exc.status == 422 and api.ref(repo, branch) is not None:
            return False
        raise
    return True


def starting_comment(api: Installation, repo: str, issue: int, run_id: str, graph: str, look: bool) -> int:
    """The comment that becomes the run's status comment; when ``look``ing (a failed start redelivered),
    the one that start may have posted already, so that it is not posted twice."""
    text = f"Interlock is starting run `{run_id}`"
    if look:
        found = [c["id"] for c in api.issue_comments(repo, issue) if c["body"].startswith(text)]
        if found:
            return int(found[-1])
    return api.comment(repo, issue, f"{text} on `{graph}`…")
