"""The shell's half of supervision (SPEC U6): which run is a supervision run, and, before a supervision run's
request is filed, whether each finding it cites exists: a commit of the repository, a file and line at that
commit, a run of the repository's journal and one of its missions.

The engine checked the form (``app/engine/citation.py``); only the shell can read GitHub. A request citing
something that does not exist is refused the same way, by code: nothing is filed, the run escalates with
``citation_not_found`` and the issue is told which citation failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypedDict, assert_never

from app.engine.citation import Citation, Commit, FileLine, RunMission, cited
from app.engine.effects import Effect, FileRequest
from app.engine.events import Event, UpstreamChanged
from app.engine.graph.model import Graph
from app.engine.record import Run, UpstreamState
from app.github.client import Installation
from app.github.config import RepoConfig
from app.github.teams import TeamSettings
from app.runner.driver import Applied
from app.store.github import GitHubStore

UNREADABLE_IN_PATH = frozenset("#?")


class GitHubRuns(Protocol):
    """What the check needs of the GitHub shell (``app/webhooks/shell.py``, which calls it: named, not imported)."""

    api: Installation
    repo: str

    def record(self, run_id: str, make: Callable[[Run], Event]) -> Applied: ...

    def execute(self, run: Run, graph: Graph, effects: list[Effect]) -> Run: ...


class StartTerms(TypedDict):
    upstream: tuple[str, ...]
    supervision: bool


def start_terms(config: RepoConfig, team: TeamSettings, graph: Graph, repo: str) -> StartTerms:
    """A run of its team's ``onRunEnd`` graph is a supervision run; the requests it files go normally to the
    repository it supervises, which the ``upstream:`` allow-list must then not block."""
    supervision = team.on_run_end is not None and team.on_run_end == graph.name
    allowed = tuple(config.upstream)
    return StartTerms(upstream=(*allowed, repo) if supervision else allowed, supervision=supervision)


def refused_filing(runs: GitHubRuns, run: Run, effect: FileRequest, issue: int, mark: str) -> Run | None:
    """``None`` when the request may be filed; else the run after its refusal: the refusal recorded first (the
    run escalates, and a redelivery no longer owes the filing), then the issue told why, with the filing's mark."""
    if not run.supervision:
        return None
    missing = [problem for citation in cited(effect.body).found if (problem := absent(runs, citation))]
    if not missing:
        return None
    why = "; ".join(missing)

    def refusal(current: Run) -> UpstreamChanged:
        return UpstreamChanged(
            key=f"{current.id}/refused/{current.mission_count}",
            at=current.updated_at,
            state=UpstreamState.REFUSED,
            note=why,
        )

    applied = runs.record(run.id, refusal)
    run = runs.execute(applied.run, applied.graph, applied.effects) if applied.new else applied.run
    text = f"Interlock refused to file the request {effect.title!r}: {why}. Nothing was filed (SPEC U6)."
    runs.api.comment(runs.repo, issue, f"{text}\n\n{mark}")
    return run


def absent(runs: GitHubRuns, citation: Citation) -> str | None:
    """Why the cited finding does not exist in the supervised repository; ``None`` when it does."""
    match citation:
        case Commit(commit=sha):
            return None if _full_sha(runs, sha) else f"commit {sha} is not in {runs.repo}"
        case FileLine(path=path, line=line, commit=sha):
            return _file_line_absent(runs, path, line, sha)
        case RunMission(run=run_id, seq=seq):
            found = GitHubStore(runs.api, runs.repo).find(run_id)  # its own store: the current run's reads stay
            if found is None:
                return f"run {run_id} is not in the journal of {runs.repo}"
            return None if seq <= found.mission_count else f"run {run_id} has no mission {seq}"
        case _:
            assert_never(citation)


def _file_line_absent(runs: GitHubRuns, path: str, line: int, sha: str) -> str | None:
    """Why ``path:line@sha`` is no line of a file of the repository. A ``#`` or ``?`` in a path cannot reach
    GitHub whole (the HTTP client takes it for a fragment or a query even quoted): such a citation is refused,
    never checked as another path; a folder (whose listing the raw contents API answers as text) is no file."""
    full = _full_sha(runs, sha)
    if full is None:
        return f"commit {sha} is not in {runs.repo}"
    if UNREADABLE_IN_PATH & set(path):
        return f"{path} cannot be checked: Interlock reads no path with `#` or `?` on GitHub"
    text = runs.api.file_only(runs.repo, path, full)
    if text is None:
        return f"{path} does not exist at {sha} as a file"
    lines = len(text.decode("utf-8", errors="replace").splitlines())
    return None if line <= lines else f"{path} has {lines} lines at {sha}, not {line}"


def _full_sha(runs: GitHubRuns, sha: str) -> str | None:
    """The commit ``sha`` if the repository has it, else ``None`` (GitHub answers 404)."""
    data = runs.api.call("GET", f"/repos/{runs.repo}/git/commits/{sha}", missing_ok=True)
    found = data.get("sha") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None
