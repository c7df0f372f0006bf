"""Requests between repositories on GitHub (SPEC U3, U4, V6): a run that answers ``NEEDS_UPSTREAM`` files an
issue in the target repository; the App keeps that issue's lifecycle as ``request:*`` labels from what happens
there, and tells the waiting run when the request is done, delivered or rejected.

Why here and not in the engine: the engine decides *that* a request is filed and what a state change means for
the waiting run (``app/engine/people.py`` ``on_upstream``); which team of the target takes the request, how it
is labelled, whether it starts by itself, and how an upstream run's progress reaches the run that waits are
GitHub's business. The request issue carries a hidden marker naming the waiting run; the marker is text anyone
can copy, so a state change is applied to the waiting run only when its record names that very issue as the
request it filed (SPEC GH9): a forged marker moves nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from app.engine.effects import Effect, FileRequest
from app.engine.errors import EventRejected, RunNotFound
from app.engine.events import Event, Linked, UpstreamChanged
from app.engine.graph.model import Graph
from app.engine.record import Run, Status, UpstreamState
from app.github.client import GitHubApp, GitHubError, Installation
from app.github.config import ConfigInvalid, RepoConfig
from app.github.extends import load_config
from app.github.installations import installation_for
from app.github.lost_answer import made_once
from app.github.teams import TEAM_LABEL, TeamSettings
from app.runner.driver import Applied
from app.store.github import GitHubStore
from app.webhooks.delivery import Delivery
from app.webhooks.issue_runs import issue_runs
from app.webhooks.router import Outcome
from app.webhooks.teams.filing import claim_filing, refuse_cycle, release_filing, unfileable

UPSTREAM_MARKER = "<!-- interlock:upstream run={run_id} repo={repo}{chain}{key} -->"
MARKER = re.compile(
    r"<!-- interlock:upstream run=(?P<run>[\w.-]+) repo=(?P<repo>[\w.-]+/[\w.-]+)"
    r"(?: chain=(?P<chain>[\w.,:/-]*))?(?: key=(?P<key>[\w./-]+))? -->"
)
RECENT = 100  # the target's newest issues searched for a request a lost answer made (issue 28)
SUPERVISED = re.compile(r"to supervise run `[\w.-]+` of team `(?P<team>[\w.-]+)`")
UPSTREAM_LINK = "upstream"  # the run's link to the request it filed, `owner/name#number`: only its close counts
AUTO_LINK = "upstream_team"  # the target team that auto-accepts the request the run filed (SPEC U4)
FILED_LINK = "upstream_request"  # the key of the FileRequest effect that filed it: a redelivery files it once
URL_LINK = "upstream_url"
REQUEST_LABEL = "request:"
STATES = ("open", "accepted", "in_progress", "done", "delivered", "rejected")  # SPEC U3, in order
TEAM_LINE = re.compile(r"^team:\s*(?P<team>[A-Za-z0-9][A-Za-z0-9_.-]{0,62})\s*$", re.IGNORECASE)
SUMMARY_CHARS = 2000  # of the upstream run's last result, in the waiting run's context
log = logging.getLogger("interlock.github")


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``), which imports this module."""

    api: Installation
    app: GitHubApp
    installation: int
    repo: str
    default_branch: str
    library: list[Path]
    store: GitHubStore

    def __init__(
        self, app: GitHubApp, installation: int, repo: str, default_branch: str, library: list[Path] | None = None
    ) -> None: ...

    def config(self) -> RepoConfig: ...

    def api_of(self, repo: str) -> Installation: ...

    def team_of(self, run: Run) -> TeamSettings: ...

    def is_live(self, run: Run) -> bool: ...

    def record(self, run_id: str, make: Callable[[Run], Event]) -> Applied: ...

    def execute(self, run: Run, graph: Graph, effects: list[Effect]) -> Run: ...

    def apply(self, run_id: str, make: Callable[[Run], Event]) -> Run: ...


R = TypeVar("R", bound=GitHubRuns)


def named_team(body: str) -> tuple[str | None, str]:
    """The target team a request names on the first line of its body, ``team: <name>``, and the rest of the
    body; ``None`` when it names none. In the answer's fence this is the line after the title::

        ```request
        octo/lib
        Add retries
        team: platform
        The API flakes.
        ```
    """
    first, _, rest = body.partition("\n")
    found = TEAM_LINE.match(first.strip())
    return (found.group("team"), rest.strip()) if found else (None, body)


def taking_team(teams: list[TeamSettings], named: str | None) -> TeamSettings:
    """The team of the target that takes a request: the one it names, else the one that accepts requests, else
    the repository's default team. A name the target does not know is no name (the body says so)."""
    chosen = next((team for team in teams if team.name == named), None) if named else None
    return chosen or next((team for team in teams if team.accepts_requests), teams[0])


def target_config(api: Installation, target: str) -> tuple[RepoConfig, str] | None:
    """The target repository's configuration as the App reads it there (its default branch, over what it
    extends), and that branch; ``None`` when it cannot be read or is invalid: the request is filed all the same,
    open for a person."""
    try:
        branch = str((api.repository(target) or {}).get("default_branch") or "main")
        return load_config(api, target, branch), branch
    except (ConfigInvalid, GitHubError) as exc:
        if isinstance(exc, GitHubError) and exc.status >= 500:
            raise  # GitHub failed: the delivery fails, and its redelivery files the request then
        log.warning("the configuration of %s cannot be read (%s): its request is filed open", target, exc)
        return None


def unknown_team(named: str | None, taken: str | None, target: str) -> str:
    """What the request's body says when the team it names is not the one that took it: the target has none so
    named (a misspelling, a renamed team), and a person of the target should know what was asked."""
    return f"(The request named team `{named}`, which {target} does not have.)" if named and named != taken else ""


def request_body(
    run: Run, repo: str, issue: int, text: str, note: str, chain: list[str] | None = None, key: str = ""
) -> str:
    """The request issue's body: the agent's words, where it comes from, and the marker naming the waiting run,
    the chain of teams (``owner/name:team``) that wait on it, its own first (SPEC U3: no cycle), and the key of
    the effect that filed it (a lost answer's issue is found by it, issue 28)."""
    chained = f" chain={','.join(chain)}" if chain else ""
    marker = UPSTREAM_MARKER.format(run_id=run.id, repo=repo, chain=chained, key=f" key={key}" if key else "")
    said = f"\n\n{note}" if note else ""
    return f"{text}{said}\n\n_Filed by Interlock for run `{run.id}` of {repo}#{issue}._\n{marker}"


def file_request(runs: GitHubRuns, run: Run, effect: FileRequest, issue: int, mark: str) -> Run:
    """File the request upstream (SPEC U3), marked so that its progress resumes this run by itself, and record
    its number: only the issue the run names counts (SPEC GH9). It goes to the team the request names, else to
    the target's team that accepts requests (a ``team:<name>`` label); labelled with the target's trigger label
    when that team auto-accepts (SPEC U4, started by ``start_accepted``), else ``request:open`` for a person.
    The note on the run's issue carries the effect's mark, so a redelivery finds it was filed; a redelivery
    that finds the record names the issue this very effect filed (``FILED_LINK``) files nothing again, and a
    replica that loses the claim (``claim_filing``) leaves the filing to the one that won it (SPEC GH8)."""
    if run.links.get(FILED_LINK) != effect.key:
        installation_for(runs.app, effect.target, runs.repo, runs.installation, fresh=True)  # a reinstall: its new id
        read = target_config(runs.api_of(effect.target), effect.target)  # another account's: its installation
        named, _ = named_team(effect.body)
        taker = taking_team(read[0].team_settings(), named or supervised(runs, run, effect.target)) if read else None
        chain = chain_of(runs, run)
        if taker is not None and f"{effect.target}:{taker.name}" in chain:
            return refuse_cycle(runs, run, effect, (issue, mark), f"{effect.target}:{taker.name}", chain)
        claimed = claim_filing(runs, run, effect)
        if claimed is None:
            return run  # another replica files it (SPEC GH8)
        try:
            run = _create_request(runs, claimed, effect, issue, (read, taker, chain))
        except GitHubError as exc:
            if exc.status < 500 and exc.status != 429:  # refused for good: a person must act (SPEC U3)
                return unfileable(runs, claimed, effect, issue, mark, exc)
            release_filing(runs, claimed)  # GitHub failed: the delivery fails, its redelivery files it (GH8)
            raise
        except Exception:  # a transport error (a timeout): the same
            release_filing(runs, claimed)
            raise
    return _filed(runs, run, effect, issue, mark)


def _filed(runs: GitHubRuns, run: Run, effect: FileRequest, issue: int, mark: str) -> Run:
    """The filed request in the waiting run's record, if it waits without its id yet (SPEC V6), and said on the
    run's issue with the effect's mark, so that a redelivery finds it was filed."""
    team, link = run.links.get(AUTO_LINK), run.links[UPSTREAM_LINK]
    if run.upstream is not None and run.upstream.id is None:  # SPEC V6: the run waits with its request's id
        state = UpstreamState.ACCEPTED if team else UpstreamState.OPEN
        moved = UpstreamChanged(key=f"{effect.key}/{state}", at=run.updated_at, state=state, id=link)
        run = runs.record(run.id, lambda r: moved).run
    said = f"Filed the upstream request {run.links.get(URL_LINK) or link} for this run. " + (
        f"Team `{team}` of {effect.target} accepts requests by itself: it starts without a person."
        if team
        else f"It waits for a person of {effect.target} to accept it."
    )
    runs.api.comment(runs.repo, issue, f"{said}\n\n{mark}")
    return run


def own_marker(body: str) -> re.Match[str] | None:
    """The marker of a request the App filed: only as the body's own trailer, after the line naming the same run
    (``request_body``); a marker quoted anywhere else (a title copied into another issue) is no marker (GH9)."""
    lines = body.rstrip().splitlines()
    found = MARKER.fullmatch(lines[-1].strip()) if len(lines) >= 2 else None
    if found is None:
        return None
    return found if lines[-2].startswith(f"_Filed by Interlock for run `{found.group('run')}` of ") else None


def chain_of(runs: GitHubRuns, run: Run) -> list[str]:
    """The teams (``owner/name:team``) that wait, directly or through requests, on what ``run`` asks for: its
    own, then those its own request's marker carries when it works on a request (SPEC U3: no cycle)."""
    found = None if run.supervision else own_marker(run.request.body)
    carried = [link for link in (found.group("chain") or "").split(",") if link] if found else []
    return [f"{runs.repo}:{run.team or runs.team_of(run).name}", *carried]


def supervised(runs: GitHubRuns, run: Run, target: str) -> str | None:
    """The team a supervision run supervises, which takes its requests to its own repository (SPEC U6): a
    supervisor asks the team it watches, not itself; ``None`` for any other run or repository."""
    found = SUPERVISED.search(run.request.body) if run.supervision and target == runs.repo else None
    return found.group("team") if found else None


Taken = tuple[tuple[RepoConfig, str] | None, TeamSettings | None, list[str]]


def _create_request(runs: GitHubRuns, run: Run, effect: FileRequest, issue: int, taken: Taken) -> Run:
    """The request issue made in the target, for the team that takes it, and the run's record naming it."""
    named, text = named_team(effect.body)
    read, team, chain = taken
    auto = read is not None and team is not None and team.auto_accept
    labels = [read[0].trigger_label, f"{REQUEST_LABEL}accepted"] if auto and read else [f"{REQUEST_LABEL}open"]
    labels += [f"{TEAM_LABEL}{team.name}"] if team is not None and not team.implicit else []
    note = unknown_team(named, team.name if team else None, effect.target)
    body = request_body(run, runs.repo, issue, text, note, chain, effect.key)
    created = made_request(runs, effect) or _create_issue(runs, effect, body, labels)
    filed = {UPSTREAM_LINK: f"{effect.target}#{created['number']}", FILED_LINK: effect.key, URL_LINK: created["url"]}
    if auto and team is not None:
        filed[AUTO_LINK] = team.name
    key = f"{run.id}/upstream/{filed[UPSTREAM_LINK]}"
    return runs.record(run.id, lambda r: Linked(key=key, at=r.updated_at, links=filed)).run


def _create_issue(runs: GitHubRuns, effect: FileRequest, body: str, labels: list[str]) -> dict[str, Any]:
    """The request issue made; when its answer is lost, the issue GitHub made of it (issue 28)."""

    def make() -> dict[str, Any]:
        return runs.api_of(effect.target).create_issue(effect.target, effect.title, body, labels)

    return made_once(make, lambda: made_request(runs, effect))


def made_request(runs: GitHubRuns, effect: FileRequest) -> dict[str, Any] | None:
    """The request issue ``effect`` filed already, among the target's newest issues: an earlier attempt's, whose
    answer was lost (a timeout, a 5xx after the fact, a crash); ``None`` when there is none. Only an issue the
    App's bot opened, whose trailer carries the effect's key and this repository, counts: a copied marker is not the
    App's (GH9), and another repository's run may have the same id."""
    params = {"state": "all", "sort": "created", "direction": "desc", "per_page": RECENT}
    slug = runs.app.identity.slug
    listed = runs.api_of(effect.target).call("GET", f"/repos/{effect.target}/issues", params=params)
    for issue in listed if isinstance(listed, list) else []:
        user = issue.get("user") or {} if isinstance(issue, dict) else {}
        if user.get("type") != "Bot" or (slug and user.get("login") != f"{slug}[bot]"):
            continue
        found = own_marker(str(issue.get("body") or ""))
        ours = found is not None and (found.group("key"), found.group("repo")) == (effect.key, runs.repo)
        if ours and isinstance(issue.get("number"), int):  # a run id is only its repository's: the key and repo
            return {"number": issue["number"], "url": str(issue.get("html_url") or "")}
    return None


def start_accepted(runs: GitHubRuns, run: Run, app_slug: str | None, start: Callable[[Delivery], Outcome]) -> None:
    """SPEC U4: the request ``run`` filed went to a team that auto-accepts: start it there without a person, by
    the trigger label's own start path (``start``), so the team's queue and graph apply as to any trigger. The
    delivery id is derived from the request, so a redelivery of the event that filed it starts nothing twice;
    an issue that has a run already (started, or accepted by a person first) is left alone."""
    team, link = run.links.get(AUTO_LINK), run.links.get(UPSTREAM_LINK, "")
    target, _, number = link.rpartition("#")
    if not team or not app_slug or run.status is not Status.AWAITING_UPSTREAM or not number.isdigit():
        return
    upstream = sibling(runs, target)
    if issue_runs(upstream, int(number)):
        return
    config, bot = upstream.config(), f"{app_slug}[bot]"
    assert run.upstream is not None
    named, text = named_team(run.upstream.body)
    note = unknown_team(named, team, target)
    labels = [config.trigger_label, f"{REQUEST_LABEL}accepted", f"{TEAM_LABEL}{team}"]
    issue: dict[str, Any] = {
        "number": int(number),
        "title": run.upstream.title,
        "body": request_body(run, runs.repo, int(run.links.get("issue", "0")), text, note, chain_of(runs, run)),
        "labels": [{"name": name} for name in labels],
        "user": {"login": bot, "type": "Bot"},
        "updated_at": run.updated_at.isoformat(),
    }
    payload = {
        "action": "labeled",
        "label": {"name": config.trigger_label},
        "installation": {"id": upstream.installation},
        "repository": {"full_name": target, "default_branch": upstream.default_branch},
        "sender": {"login": bot, "type": "Bot"},
        "issue": issue,
    }
    start(Delivery("issues", f"{run.id}/accept/{link}", payload))


def sibling(runs: R, repo: str) -> R:
    """The GitHub shell of another repository, through the installation of the App that reaches it: the same
    for the same account, another's for a request across accounts (``app/github/installations.py``)."""
    if repo == runs.repo:
        return type(runs)(runs.app, runs.installation, repo, runs.default_branch, runs.library)
    installation = installation_for(runs.app, repo, runs.repo, runs.installation, fresh=True)  # rare: asked anew
    branch = default_branch_of(runs.api_of(repo), repo)
    return type(runs)(runs.app, installation, repo, branch, runs.library)


def default_branch_of(api: Installation, repo: str) -> str:
    """The default branch of ``repo`` as GitHub says it, where its configuration is read."""
    return str((api.repository(repo) or {}).get("default_branch") or "main")


def lifecycle(status: Status) -> UpstreamState:
    """The request's state while a run works on it: live is in progress, a finished run whose pull request
    awaits merge is done, merged is delivered; a cancelled run leaves the request open for another."""
    if status is Status.AWAITING_MERGE:
        return UpstreamState.DONE
    if status is Status.DONE:
        return UpstreamState.DELIVERED
    return UpstreamState.OPEN if status is Status.CANCELLED else UpstreamState.IN_PROGRESS


def set_state(api: Installation, repo: str, issue: int, state: str) -> None:
    """Exactly one ``request:*`` label on the request issue: ``state``'s (changing nothing already right)."""
    assert state in STATES, state
    wanted, current = f"{REQUEST_LABEL}{state}", api.labels(repo, issue)
    for label in sorted(current):
        if label.startswith(REQUEST_LABEL) and label != wanted:
            api.remove_label(repo, issue, label)
    if wanted not in current:
        api.add_labels(repo, issue, [wanted])


def is_request(issue: dict[str, Any], app_slug: str | None) -> bool:
    """Whether an issue of a payload is a request the App filed: opened by the App, carrying the marker."""
    author = str((issue.get("user") or {}).get("login") or "")
    return bool(app_slug) and author == f"{app_slug}[bot]" and own_marker(str(issue.get("body") or "")) is not None


def follow_request(runs: GitHubRuns, run: Run) -> None:
    """After each transition of a run on a request issue (its body carries the marker): the issue's label follows
    the run, and at done and delivered the waiting run is told, with the outcome (SPEC U3)."""
    found = None if run.supervision else own_marker(run.request.body)
    issue = run.links.get("issue", "")
    if found is None or not issue.isdigit():
        return
    state = lifecycle(run.status)
    closed = {f"{REQUEST_LABEL}rejected", f"{REQUEST_LABEL}delivered"} & runs.api.labels(runs.repo, int(issue))
    if closed and state != "delivered":
        return  # SPEC U3: closed upstream, the label says so; the run still working on it does not change that
    set_state(runs.api, runs.repo, int(issue), state)
    if state in ("done", "delivered"):
        tell_waiting(runs, run, found.group("repo"), found.group("run"), state)


def tell_waiting(runs: GitHubRuns, run: Run, origin_repo: str, origin_run: str, state: UpstreamState) -> None:
    """The waiting run learns that its request is ``state``, with the pull request and a summary; applied only
    if its record names this issue as its request (GH9). Once per state: the key is the request's and the
    state's, so a redelivery applies nothing twice; a waiting run that has moved on refuses it."""
    filed = f"{runs.repo}#{run.links['issue']}"
    pull = f"{runs.api.web}/{runs.repo}/pull/{run.links['pr']}" if "pr" in run.links else None
    summary = outcome_summary(run, pull)

    def event(waiting: Run) -> Event:
        if waiting.links.get(UPSTREAM_LINK) != filed:
            raise EventRejected(waiting.id, waiting.status.value, "upstream change", "not the request this run filed")
        return UpstreamChanged(key=f"{filed}/{state}", at=run.updated_at, state=state, id=pull, summary=summary)

    try:
        sibling(runs, origin_repo).apply(origin_run, event)
    except (RunNotFound, EventRejected) as exc:
        log.info("the run waiting on %s was not moved: %s", filed, exc)
    except GitHubError as exc:
        if exc.status not in (403, 404):  # a marker naming a repository the App cannot reach moves nothing
            raise


def outcome_summary(run: Run, pull: str | None) -> str:
    """What the waiting run's next mission reads of the upstream work: its pull request, the path its run took,
    and the start of its last result."""
    last = run.context.results[-1].body[:SUMMARY_CHARS] if run.context.results else ""
    lines = [f"Pull request: {pull}" if pull else "", f"Path: {run.recap}" if run.recap else "", last]
    return "\n".join(line for line in lines if line)


def label_closed(origin: GitHubRuns, run_id: str, filed: str, state: str) -> None:
    """The request issue ``filed`` (`owner/name#number`) was closed, by the App or someone allowed: its label says
    delivered or rejected — if the run its marker names did file it (the marker is anyone's to copy, GH9)."""
    waiting = origin.store.find(run_id)
    if waiting is not None and waiting.links.get(UPSTREAM_LINK) == filed:
        repo, _, number = filed.rpartition("#")
        set_state(origin.api_of(repo), repo, int(number), state)
