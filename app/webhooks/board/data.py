"""What the web board shows, read through the App's installations from each repository's state branch.

A repository's runs cost two calls: the listing of ``runs/`` and one GraphQL read of every record at the same
commit (``Installation.snapshot``, in batches of 100). They are kept 10 seconds per repository (a setting), so a
page that refreshes itself, or several people looking at once, do not spend the installation's quota; an action
taken on the board forgets its repository's copy, so the page after it shows the change. Whether a person may
act on a repository (the buttons) is kept ``PERMISSION_TTL_S`` seconds; the action itself checks it again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
from githubkit.exception import GitHubException
from pydantic import ValidationError

from app.engine.errors import GraphInvalid
from app.engine.graph.cost_bound import worst_case
from app.engine.graph.mermaid import draw_mermaid
from app.engine.graph.model import Graph
from app.engine.record import FINAL, Run, Status
from app.github.client import GitHubApp, GitHubError, Installation
from app.github.config import ConfigInvalid
from app.runner.driver import RunDriver, StoredGraphUnreadable
from app.store.github import GitHubStore
from app.store.journal import RECORD_SUFFIX, RUNS_FOLDER, STATE_BRANCH, record_path

RUNS_TTL_S = 10.0  # the default of INTERLOCK_BOARD_CACHE_S
PERMISSION_TTL_S = 60.0
BATCH = 100  # record paths per GraphQL read
RUNS_CACHE: dict[str, tuple[float, list[Run]]] = {}
PERMISSION_CACHE: dict[tuple[str, str], tuple[float, bool]] = {}
# what reading GitHub can raise: a REST answer, a GraphQL error or failure, a connection that broke
UNREADABLE = (GitHubError, GitHubException, httpx.HTTPError)
ORIGIN = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)#(?P<number>\d+)$")
PAUSABLE = frozenset({Status.RUNNING, Status.GATE_WAIT, Status.AWAITING_INPUT, Status.AWAITING_UPSTREAM})
RESUMABLE_AS_IS = frozenset({Status.INTERRUPTED, Status.GATE_WAIT, Status.AWAITING_INPUT, Status.AWAITING_UPSTREAM})
RETRYABLE = frozenset({Status.FAILED, Status.ESCALATED})


@dataclass(frozen=True)
class Row:
    """One run as the board shows it."""

    repo: str
    run: Run
    may_act: bool

    @property
    def key(self) -> str:
        return f"{self.repo}:{self.run.id}"

    def actions(self) -> list[str]:
        """The buttons of the row: none without write permission, else those the run's state allows."""
        if not self.may_act:
            return []
        status, found = self.run.status, []
        if status in PAUSABLE and not self.run.stop_requested:
            found.append("pause")
        if status in RESUMABLE_AS_IS:
            found.append("resume")
        if status in RETRYABLE:
            found.append("retry")
        if status not in FINAL:
            found.append("cancel")
        return found


def repo_runs(api: Installation, repo: str, ttl: float = RUNS_TTL_S, now: float | None = None) -> list[Run]:
    """Every run recorded on ``repo``'s state branch, oldest first (kept ``ttl`` seconds). A record that does not
    read as one (the branch is editable by hand) is left out rather than failing the page."""
    moment = time.monotonic() if now is None else now
    cached = RUNS_CACHE.get(repo)
    if cached is not None and moment - cached[0] < ttl:
        return cached[1]
    names = api.folder(repo, RUNS_FOLDER, STATE_BRANCH) or []
    paths = [record_path(name.removesuffix(RECORD_SUFFIX)) for name in names if name.endswith(RECORD_SUFFIX)]
    runs: list[Run] = []
    for start in range(0, len(paths), BATCH):
        snapshot = api.snapshot(repo, STATE_BRANCH, paths[start : start + BATCH])
        for text in snapshot.files.values() if snapshot else []:
            try:
                runs.append(Run.from_journal(text)) if text is not None else None
            except ValidationError:
                continue
    runs.sort(key=lambda run: run.created_at)
    RUNS_CACHE[repo] = (moment, runs)
    return runs


def forget(repo: str) -> None:
    """The next page reads ``repo`` again: an action changed it."""
    RUNS_CACHE.pop(repo, None)


def may_act(repo: str, login: str, check: Callable[[], bool], fresh: bool = False) -> bool:
    """Whether ``login`` may steer runs of ``repo`` (``check``: the comment commands' rule, write permission by
    default), kept ``PERMISSION_TTL_S``; ``fresh``: checked now whatever is kept (an action)."""
    key, moment = (repo, login), time.monotonic()
    cached = PERMISSION_CACHE.get(key)
    if not fresh and cached is not None and moment - cached[0] < PERMISSION_TTL_S:
        return cached[1]
    allowed = check()
    PERMISSION_CACHE[key] = (moment, allowed)
    return allowed


def board_rows(
    github: GitHubApp,
    visible: list[tuple[int, str]],
    login: str,
    allowed: Callable[[int, str], bool],
    ttl: float = RUNS_TTL_S,
) -> tuple[list[Row], list[str]]:
    """Every run of every repository ``login`` can see, and a note for each repository that could not be read;
    ``allowed(installation, repo)`` says whether the person may steer its runs."""
    rows: list[Row] = []
    notes: list[str] = []
    for installation, repo in visible:
        try:
            runs = repo_runs(github.installation(installation), repo, ttl)
            writer = may_act(repo, login, lambda: allowed(installation, repo)) if runs else False  # noqa: B023
        except (*UNREADABLE, ConfigInvalid) as exc:
            notes.append(f"{repo} could not be read: {exc or type(exc).__name__}")
            continue
        rows += [Row(repo, run, writer) for run in runs]
    return rows, notes


@dataclass(frozen=True)
class Picture:
    """A run's graph as the board shows it: the graph to draw as SVG (``None`` when it cannot be read, then
    ``source`` says why) with its current stage and visits, and its Mermaid source. The page draws the SVG, so
    that every text in it passes the page's redactor."""

    source: str
    graph: Graph | None = None
    current: str | None = None
    visits: Mapping[str, int] = field(default_factory=dict)
    worst: str = ""  # the worst case of any run of the graph (SPEC G7)


def picture(api: Installation, repo: str, run: Run) -> Picture:
    """The run's stored graph with its current node and visits (SPEC W4), or why it cannot be drawn."""
    try:
        graph = RunDriver(GitHubStore(api, repo)).graph_of(run)
    except (StoredGraphUnreadable, GraphInvalid, *UNREADABLE) as exc:
        return Picture(f"%% the graph of run {run.id} cannot be drawn: {exc}")
    worst = worst_case(graph, run.policy, run.advisor).text()  # SPEC G7
    return Picture(draw_mermaid(graph, run.stage, run.visits), graph, run.stage, run.visits, worst)


def origin_link(web_url: str, origin: str) -> str | None:
    """The issue a run came from, as a link on GitHub; ``None`` for an origin that is no issue."""
    found = ORIGIN.match(origin)
    return f"{web_url}/{found.group('repo')}/issues/{found.group('number')}" if found else None


def age(run: Run, now: datetime | None = None) -> str:
    seconds = int(((now or datetime.now(UTC)) - run.created_at).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def cost(run: Run) -> str:
    unknown = run.ledger.unknown_costs()
    return f"${run.ledger.spent_usd():.2f}" + (f" + {unknown} unknown" if unknown else "")
