"""The trigger label's start of a run (SPEC GH1), the longest path a delivery takes, kept out of the handlers.

``Handlers.issue_labeled`` reads the label and checks the labeller; from there the start is here: the redelivery
of a start made sure of, one live run per issue, the run's team and graph chosen from the issue's labels (each
refusal told on the issue), the team's queue or stop consulted (``app/webhooks/teams/start.py``), and then the run
made by the GitHub shell (``GitHubRuns.start``). A configuration or base branch that refuses the start is said on
the issue once per delivery, so that a redelivery refused again says nothing twice.
"""

from __future__ import annotations

import logging

from app.engine.errors import VersionConflict
from app.engine.graph.model import Graph
from app.engine.record import Run
from app.github.config import CONFIG_PATH, ConfigInvalid, RepoConfig, trigger_label_of
from app.github.graphs import graph_label, repo_graph
from app.github.teams import TeamSettings, TeamUnknown, choose_team, graph_folders, labelled_team
from app.webhooks.delivery import Delivery, at, issue_labels, text_at, when
from app.webhooks.issue_runs import issue_runs, run_id_for
from app.webhooks.router import Outcome
from app.webhooks.run_start import BaseBranchMissing
from app.webhooks.shell import GitHubRuns
from app.webhooks.teams.satellites import SatelliteUnreadable
from app.webhooks.teams.start import may_start, settle_start

log = logging.getLogger("interlock.webhooks")


def trigger_config(runs: GitHubRuns, delivery: Delivery, issue: int, label: str) -> RepoConfig:
    """The repository's configuration; one refused is still the service's 422, raised after the issue is told
    why nothing starts (``refuse_config``)."""
    try:
        return runs.config()
    except ConfigInvalid as exc:
        refuse_config(runs, delivery, issue, label, exc)
        raise


def start_issue(runs: GitHubRuns, delivery: Delivery, issue: int, user: str, app_slug: str | None) -> Outcome:
    """The issue's next run, started by ``user``'s trigger label, who may start runs."""
    earlier = issue_runs(runs, issue)
    held = next((run for run in earlier if delivery.delivery_id in run.applied), None)
    if held is not None:  # the redelivery of a start: make sure all it did happened (SPEC GH8)
        if held is earlier[-1]:  # a run a later one replaced owes nothing: the issue's labels are the new run's
            runs.reconcile(held, runs.graph_of(held))
            settle_start(runs, runs.team_of(held), issue, held)  # SPEC U5, H4: the queue and stop too
        return Outcome.HANDLED
    if earlier and runs.is_live(earlier[-1]):
        return Outcome.IGNORED  # SPEC GH1: one live run per issue
    chosen = team_and_graph(runs, delivery, issue)
    if chosen is None:
        return Outcome.HANDLED
    team, graph = chosen
    if not may_start(runs, delivery, issue, team, app_slug):
        return Outcome.HANDLED  # SPEC U5, H4: queued, the issue told its place; nothing else is made
    try:
        run = next_run(runs, delivery, issue, graph, user, earlier, team)
    except (BaseBranchMissing, SatelliteUnreadable) as exc:  # bad configuration: nothing was made yet
        log.warning("refused %s: %s", delivery.describe(), exc)
        fix = "Nothing was started; once that is done, redeliver this delivery or label the issue again."
        say_once(runs, issue, delivery, f"Interlock cannot start: {exc}. {fix}")
        return Outcome.IGNORED
    except VersionConflict:  # SPEC GH1: a label delivered at the same time started the run first
        log.info("ignored %s: another delivery started the issue's run first", delivery.describe())
        return Outcome.IGNORED
    settle_start(runs, team, issue, run)
    return Outcome.HANDLED


def team_and_graph(runs: GitHubRuns, delivery: Delivery, issue: int) -> tuple[TeamSettings, Graph] | None:
    """The run's team and valid graph (issue 13, SPEC G6); ``None`` when it cannot start, the issue told why:
    a ``team:`` label naming no team, or a graph missing or invalid."""
    config, labels = runs.config(), issue_labels(delivery)
    teams = runs.teams()
    try:
        named = labelled_team(teams, labels)
    except TeamUnknown as exc:
        runs.api.comment(runs.repo, issue, f"Interlock cannot start: {exc}. Nothing was started.")
        return None
    chosen = graph_label(labels, config, (named or teams[0]).default_graph)
    folders = graph_folders(teams, labels)
    graph, errors, holder = repo_graph(runs.api, runs.repo, runs.default_branch, chosen, folders, runs.library)
    if graph is None or errors:
        listed = "\n".join(f"- {error}" for error in errors) or f"- no graph named `{chosen}`"
        runs.api.comment(runs.repo, issue, f"Interlock cannot start: graph `{chosen}` is not valid.\n\n{listed}")
        return None
    return choose_team(teams, labels, holder), graph


def next_run(
    runs: GitHubRuns,
    delivery: Delivery,
    issue: int,
    graph: Graph,
    user: str,
    earlier: list[Run],
    team: TeamSettings,
) -> Run:
    """The issue's next run: `issue-N`, then after each run that ended a new id, branch and record; the
    ended run's final label goes, so the issue shows the new run's state only."""
    issue_data = at(delivery.payload, "issue") or {}
    masked = runs.api.redactor.text  # the request is a person's text: masked where it enters (issue 11)
    run = runs.start(
        issue,
        masked(text_at(issue_data, "title") or f"Issue #{issue}"),
        masked(text_at(issue_data, "body") or ""),
        graph,
        key=delivery.delivery_id,
        at=when(text_at(issue_data, "updated_at")),
        by=user,
        run_id=run_id_for(issue, ended=len(earlier)),
        team=team,
    )
    if earlier:
        runs.api.remove_label(runs.repo, issue, f"interlock:{earlier[-1].status.value}")
    return run


def refuse_config(runs: GitHubRuns, delivery: Delivery, issue: int, label: str, exc: ConfigInvalid) -> None:
    """A trigger label on a repository whose configuration is refused (issue 13): every problem on the issue,
    once per delivery. A file that is not even YAML names no trigger label: then nothing is said."""
    if label != trigger_label_of(runs.api.file(runs.repo, CONFIG_PATH, runs.default_branch)):
        return
    listed = "\n".join(f"- {problem}" for problem in exc.problems)
    fix = (
        f"Nothing was started. Fix `{CONFIG_PATH}` on the default branch (`interlock config check --repo "
        f"{runs.repo}` lists every problem), then label the issue again or redeliver this delivery."
    )
    say_once(runs, issue, delivery, f"Interlock cannot start: the configuration is invalid.\n\n{listed}\n\n{fix}")


def say_once(runs: GitHubRuns, issue: int, delivery: Delivery, text: str) -> None:
    """A comment for a refused delivery, marked with its id: a redelivery that is refused again posts none."""
    mark = f"<!-- interlock:refused delivery={delivery.delivery_id} -->"
    runs.api.comment_once(runs.repo, issue, text, mark)
