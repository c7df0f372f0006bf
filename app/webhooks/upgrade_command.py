"""``/interlock resume --upgrade`` (and ``resume --upgrade at STAGE``): move a stopped run to its graph's current
version, then resume it (SPEC J7), as ``interlock resume RUN --upgrade`` does on a person's machine.

Why its own command path: every other comment command is one event the record alone decides; an upgrade first
reads the graph's current version where the run's start found it — the run's team's graphset folders on the
default branch, else the other teams', else the bundled library (SPEC G6) — and saves it with the run in the
same transition as the ``GraphUpgraded`` event, the version it leaves kept by its hash (``RunDriver.upgrade_files``).
The resume that follows is its own transition, so a redelivery finds each already applied by its key.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.engine import events as ev
from app.engine.errors import EventRejected, RunNotFound
from app.engine.graph.model import Graph
from app.engine.record import Run
from app.github.graphs import graph_label, repo_graph
from app.webhooks.commands import CommandError
from app.webhooks.issue_runs import issue_runs, run_id_for
from app.webhooks.shell import GitHubRuns
from app.webhooks.teams.hold import refuse_while_stopped

UPGRADE_FLAG = "--upgrade"


def upgrade_stage(body: str) -> tuple[bool, str | None]:
    """(whether the comment is ``/interlock resume --upgrade [at STAGE]``, the stage it names). Any other shape
    of ``resume`` with ``--upgrade`` is left to the parser, which says what it understands."""
    words = body.strip().partition("\n")[0].split()
    if len(words) < 3 or words[1].lower() != "resume" or words[2].lower() != UPGRADE_FLAG:
        return False, None
    rest = words[3:]
    if not rest:
        return True, None
    if len(rest) == 2 and rest[0].lower() == "at":
        return True, rest[1]
    return False, None


def current_graph(runs: GitHubRuns, run: Run, labels: Sequence[str] = ()) -> Graph:
    """The current version of the run's graph, found where a start finds it; ``CommandError`` naming why not.
    A start reads the file the issue's ``graph:`` label (else the team's default) names, and the run keeps the
    name the graph gives itself, which may differ: that file is read too, when it still holds the run's graph."""
    teams = runs.teams()
    own = runs.team_of(run).graphsets
    folders = list(dict.fromkeys([*own, *(folder for team in teams for folder in team.graphsets)]))
    started = graph_label(labels, runs.config(), runs.team_of(run).default_graph)
    missing: list[str] = []
    for name in dict.fromkeys([run.graph, started]):
        graph, errors, holder = repo_graph(runs.api, runs.repo, runs.default_branch, name, folders, runs.library)
        if graph is None and holder is None:  # no file of that name
            missing = missing or errors
        elif graph is not None and graph.name != run.graph and name != run.graph:
            continue  # the file the labels name now holds another graph
        elif graph is None or errors:
            raise CommandError(f"the current version of graph `{run.graph}` cannot be used: {'; '.join(errors)}")
        else:
            return graph
    listed = "; ".join(missing) or f"no graph named `{run.graph}` on `{runs.default_branch}` or in the library"
    raise CommandError(f"the current version of graph `{run.graph}` cannot be used: {listed}")


def upgrade_and_resume(
    runs: GitHubRuns, issue: int, key: str, moment: datetime, by: str, stage: str | None, labels: Sequence[str] = ()
) -> Run:
    """The issue's latest run moved to its graph's current version and resumed; ``CommandError`` or
    ``EventRejected`` (nothing changed) when the run has ended, its team is stopped, the graph cannot be read, or
    the current version lacks the stage the run is at."""
    found = issue_runs(runs, issue)
    if not found:  # a comment on an issue or pull request no run belongs to (SPEC GH7)
        raise RunNotFound(run_id_for(issue), "the journal")
    run = found[-1]
    held = next((one for one in found if f"{key}/upgrade" in one.applied or key in one.applied), None)
    if held is not None and not runs.is_live(held):  # a redelivery after the run ended: nothing more (SPEC GH8)
        return held
    if not runs.is_live(run):
        raise CommandError(f"run `{run.id}` is {run.status.value}: there is no run to move to another graph")
    resume = refuse_while_stopped(runs, lambda _run: ev.Resume(key=key, at=moment, by=by, stage=stage))
    resume(run)  # a stopped team refuses the resume: refused before the move, so nothing changes
    if f"{key}/upgrade" in run.applied:  # a redelivery after the move: only the resume is owed (SPEC GH8)
        return runs.apply(run.id, resume)
    graph = current_graph(runs, run, labels)
    if stage is not None and not graph.has_stage(stage):  # refused before the move, so nothing changes
        why = f"the current version of graph `{run.graph}` has no stage `{stage}`"
        raise EventRejected(run.id, run.status.value, "Resume", why)
    version = graph.content_hash()
    if version == run.graph_hash:
        why = f"the run is already on the current version of graph `{run.graph}`; `/interlock resume` resumes it"
        raise EventRejected(run.id, run.status.value, "GraphUpgraded", why)
    moved = ev.GraphUpgraded(key=f"{key}/upgrade", at=moment, by=by, graph_hash=version)
    runs.apply(run.id, lambda _run: moved, files=runs.driver.upgrade_files(run, graph), graph=graph)
    return runs.apply(run.id, resume)
