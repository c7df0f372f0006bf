"""The guards of filing a request upstream (SPEC U3, GH8), apart from ``app/webhooks/teams/requests.py``, which
files it: a request that would come back to a team waiting in its own chain is refused, one GitHub refuses
escalates its run, and the filing is claimed on the run's record first, so that two replicas handling one
delivery file one request. Each refusal is recorded before the issue is told, as ``app/webhooks/teams/citations.py``
does, so that a redelivery owes nothing more."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from app.engine.effects import Effect, FileRequest
from app.engine.events import Event, Linked, UpstreamChanged
from app.engine.graph.model import Graph
from app.engine.record import Run, UpstreamState
from app.github.client import GitHubError, Installation
from app.runner.driver import Applied

CLAIM_LINK = "upstream_claim"  # `effect-key@time`: the delivery filing it now; another replica files nothing
CLAIM_LEASE = timedelta(minutes=10)  # a claim older than this was left by a replica that died mid-filing


class GitHubRuns(Protocol):
    """What this module needs of the GitHub shell (``app/webhooks/shell.py``)."""

    api: Installation
    repo: str

    def record(self, run_id: str, make: Callable[[Run], Event]) -> Applied: ...

    def execute(self, run: Run, graph: Graph, effects: list[Effect]) -> Run: ...


def refuse_cycle(
    runs: GitHubRuns, run: Run, effect: FileRequest, told: tuple[int, str], team: str, chain: list[str]
) -> Run:
    """SPEC U3: a request that would come back to a team already waiting in its chain (its own team, or one its
    requests pass through) would wait on itself for ever: nothing is filed, the run escalates (``upstream_cycle``)."""
    why = f"it would go to team `{team}`, which already waits on it (chain: {' → '.join(chain)})"

    def refusal(current: Run) -> UpstreamChanged:
        return UpstreamChanged(key=f"{effect.key}/cycle", at=current.updated_at, state=UpstreamState.CYCLE, note=why)

    applied = runs.record(run.id, refusal)
    run = runs.execute(applied.run, applied.graph, applied.effects) if applied.new else applied.run
    said = f"Interlock refused to file the request {effect.title!r}: {why}. Nothing was filed; the run escalated."
    runs.api.comment(runs.repo, told[0], f"{said}\n\n{told[1]}")
    return run


def claim_filing(runs: GitHubRuns, run: Run, effect: FileRequest) -> Run | None:
    """The run after this replica claimed the filing of ``effect`` by compare-and-swap on its record, before
    any issue is made; ``None`` when another delivery holds a fresh claim (two replicas handling one delivery
    file one request, SPEC GH8). The claim's key names the claim it replaces, so of two replicas that read the
    same record one wins. A claim older than ``CLAIM_LEASE`` is taken over: its holder died between the claim
    and the record of the issue, and the redelivery files it."""
    now, held = datetime.now(UTC), run.links.get(CLAIM_LINK, "")
    key, _, stamp = held.partition("@")
    if key == effect.key and now - datetime.fromisoformat(stamp) < CLAIM_LEASE:
        return None
    claim, event_key = {CLAIM_LINK: f"{effect.key}@{now.isoformat()}"}, f"{run.id}/claim/{effect.key}/from/{held}"
    applied = runs.record(run.id, lambda r: Linked(key=event_key, at=r.updated_at, links=claim))
    return applied.run if applied.new else None


def release_filing(runs: GitHubRuns, run: Run) -> None:
    """GitHub failed the filing: the claim is given up, so that the redelivery files the request at once."""
    held = run.links.get(CLAIM_LINK, "")
    released = {CLAIM_LINK: f"released {held}"}
    runs.record(run.id, lambda r: Linked(key=f"{r.id}/release/{held}", at=r.updated_at, links=released))


def unfileable(runs: GitHubRuns, run: Run, effect: FileRequest, issue: int, mark: str, exc: GitHubError) -> Run:
    """GitHub refused the request's issue with a 4xx the App cannot fix by retrying (SPEC U3): the run does not
    wait for a request that does not exist, it escalates (``upstream_unfileable``), and the issue says the fix."""
    fix = {
        403: "the App lacks the Issues permission there",
        404: f"the App is not installed on {effect.target}, or cannot see it",
        410: f"issues are turned off in {effect.target}",
        422: "GitHub refused the issue's title, body or labels",
    }.get(exc.status, "GitHub refused the issue")
    why = f"GitHub answered {exc.status} to the new issue in {effect.target}: {fix}"

    def refusal(current: Run) -> UpstreamChanged:
        return UpstreamChanged(
            key=f"{effect.key}/unfileable", at=current.updated_at, state=UpstreamState.UNFILEABLE, note=why
        )

    applied = runs.record(run.id, refusal)
    run = runs.execute(applied.run, applied.graph, applied.effects) if applied.new else applied.run
    said = (
        f"Could not file the request {effect.title!r} in `{effect.target}`: {why}. The run escalated "
        "(`upstream_unfileable`): fix that and resume it, or please file it by hand and resume it once done."
    )
    runs.api.comment(runs.repo, issue, f"{said}\n\n{mark}")
    return run
