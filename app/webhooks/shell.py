"""The GitHub shell: runs driven by webhook deliveries, journaled on the repository's state branch.

Each delivery becomes one engine event whose idempotency key is the delivery id, applied by the run driver
(``app/runner/driver.py``) with compare-and-swap on the state branch, then the effects are carried out
with the installation's token: missions dispatched as ``workflow_dispatch`` jobs on the run branch,
gates as pull-request reviews, messages as issue comments, the status comment edited in place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypedDict, Unpack, assert_never

from app.engine import effects as fx
from app.engine.anchor import settled
from app.engine.events import Event, Linked, Start
from app.engine.graph.model import Graph
from app.engine.owed import EVENTS_SENT, events_sent, owed_effects
from app.engine.record import FINAL, Run
from app.engine.team import Team
from app.github.client import GitHubApp, Installation
from app.github.config import RepoConfig
from app.github.extends import load_config
from app.github.installations import api_for, installation_for
from app.github.lost_answer import since
from app.github.seen import Seen, effect_mark
from app.github.status import render_status
from app.github.teams import TeamSettings, team_named
from app.runner.chain import head_anchor
from app.runner.driver import Applied, OrderTerms, RunDriver
from app.store.github import GitHubStore
from app.store.journal import decision_path
from app.webhooks.board.pinned import publish as publish_board
from app.webhooks.checks.run import show_check
from app.webhooks.checks.satellites import show_satellite_checks
from app.webhooks.checks.status_update import needs_comment
from app.webhooks.issue_runs import replaced, run_id_for
from app.webhooks.kept_config import CONFIG_CACHE as CONFIG_CACHE  # tests forget it as a restart would
from app.webhooks.kept_config import KeptConfig
from app.webhooks.mission_jobs import dispatch, job_of
from app.webhooks.outbox import earlier_messages, owed_entries, owed_key
from app.webhooks.run_pulls import link_open_pull, open_pull, ready_pull, request_review
from app.webhooks.run_start import create_run_branch, starting_comment, team_terms
from app.webhooks.teams import satellites
from app.webhooks.teams.citations import refused_filing, start_terms
from app.webhooks.teams.requests import file_request, follow_request

RUNNING_LABEL = "interlock:running"  # on the issue while its run is live; interlock:done or :cancelled after
log = logging.getLogger("interlock.github")


class Given(TypedDict, total=False):
    """What an event may come with besides the record (``GitHubRuns.apply`` and ``record``): ``files`` of the state
    branch to save with it, ``also`` the files it needs, read with the record in the same call, and ``graph``
    another version than the stored one, for an upgrade only (SPEC J7)."""

    files: dict[str, bytes] | None
    also: tuple[str, ...]
    graph: Graph | None


class GitHubRuns:
    def __init__(
        self, app: GitHubApp, installation: int, repo: str, default_branch: str, library: list[Path] | None = None
    ) -> None:
        self.api = app.installation(installation)
        self.app, self.installation = app, installation  # a request reaches another repository of the installation
        self.repo = repo
        self.default_branch = default_branch
        self.library = library or []
        self.store = GitHubStore(
            self.api, repo, board=True, branch_of=lambda run_id: f"interlock/{run_id}", watched=(default_branch,)
        )
        self.owed_key = owed_key(app.identity.private_key)
        self.driver = RunDriver(self.store, self._order_terms, owed=lambda r, e: owed_entries(r, e, self.owed_key))
        self._kept = KeptConfig(repo, lambda: self.store.watched_heads.get(default_branch))
        self._teams: list[TeamSettings] | None = None

    def api_of(self, repo: str) -> Installation:
        """The client for calls about ``repo``: another account's through that account's installation of the App
        (a satellite or a request's target elsewhere, ``app/github/installations.py``), else this one."""
        return api_for(self.app, self.api, repo, self.repo, self.installation)

    def config(self) -> RepoConfig:
        """The repository's configuration from its default branch, over what it extends (``extends:``), kept
        between deliveries as ``app/webhooks/kept_config.py`` says."""
        return self._kept.config(lambda: load_config(self.api, self.repo, self.default_branch))

    def _load(self, run_id: str, also: tuple[str, ...]) -> Run:
        """The record (``GitHubStore.load``), and what it says of the configuration kept: the default branch's
        head came with it."""
        run = self.store.load(run_id, also)
        if self._kept.check(self.store.watched_heads.get(self.default_branch)):
            self._teams = None  # settled from a configuration forgotten now
        return run

    def teams(self) -> list[TeamSettings]:
        """The teams, every setting decided, the default first: settled once, not at every order and lookup."""
        if self._teams is None:
            self._teams = self.config().team_settings()
        return self._teams

    def _order_terms(self) -> OrderTerms:
        """What each order names besides its effect: the advisor, the prices, and the roles of the run's team,
        whose agent, model and tools do its missions (SPEC U1); the implicit team has none: the job's agent."""
        config = self.config()
        return OrderTerms(config.advisor, config.prices, team=self._roster)

    def _roster(self, run: Run) -> Team | None:
        team = self.team_of(run)
        return None if team.implicit else team.roster

    def team_of(self, run: Run) -> TeamSettings:
        """The settings of the run's team, as the default branch's configuration has them now."""
        return team_named(self.teams(), run.team)

    def start(
        self,
        issue: int,
        title: str,
        body: str,
        graph: Graph,
        key: str,
        at: datetime,
        by: str,
        run_id: str = "",
        team: TeamSettings | None = None,
    ) -> Run:
        """A new run for an issue (SPEC GH1, GH2): run branch with an empty start commit, then the entry."""
        config = self.config()
        team = team or self.teams()[0]
        run_id = run_id or run_id_for(issue)
        branch = f"interlock/{run_id}"
        for repo in team.satellites:  # asked anew at each start: an account may have installed the App again
            installation_for(self.app, repo, self.repo, self.installation, fresh=True)
        satellites.make_branches(self.api_of, team.satellites, branch)  # SPEC U7: a run branch in each
        resumed = not create_run_branch(self.api, self.repo, branch, config.base, title)
        comment = starting_comment(self.api, self.repo, issue, run_id, graph.name, look=resumed)
        event = Start(
            key=key,
            at=at,
            by=by,
            run_id=run_id,
            title=title,
            body=body,
            origin=f"{self.repo}#{issue}",
            branch=branch,
            **team_terms(config, team),
            **start_terms(config, team, graph, self.repo),  # upstream, supervision (SPEC U3, U6)
            links={"issue": str(issue), "status_comment": str(comment)},
        )
        started = self.driver.start(event, graph)
        self.api.add_labels(self.repo, issue, [RUNNING_LABEL])
        return self.execute(started.run, graph, started.effects)

    def graph_of(self, run: Run) -> Graph:
        """The run's graph, stored beside it at start (``RunDriver.graph_of``)."""
        return self.driver.graph_of(run)

    def apply(self, run_id: str, make: Callable[[Run], Event], **given: Unpack[Given]) -> Run:
        """One event with compare-and-swap; on a conflict re-read and re-apply (SPEC J2); ``given``: what
        ``Given`` says."""
        applied = self.record(run_id, make, **given)
        if not applied.new:  # already applied: a redelivery; make sure its effects happened (SPEC GH8)
            if replaced(self, applied.run):  # a later run of the issue owns its labels and state now
                return applied.run
            return self.reconcile(applied.run, applied.graph, applied.key)
        return self.execute(applied.run, applied.graph, applied.effects)

    def record(self, run_id: str, make: Callable[[Run], Event], **given: Unpack[Given]) -> Applied:
        """The transition saved, effects not yet carried out."""
        also = given.get("also", ())
        return self.driver.apply(
            run_id, make, given.get("graph"), given.get("files"), load=lambda rid: self._load(rid, also)
        )

    def execute(self, run: Run, graph: Graph, effects: list[fx.Effect]) -> Run:
        """Carry out the effects in order, then edit the status comment once. A failure stops here: the
        delivery fails, GitHub redelivers it, and ``reconcile`` carries out what is still owed."""
        jobs: dict[int, str] = {}
        before = self.store.before.get(run.id)  # the record the transition started from
        for effect in effects:
            run = self._carry_out(run, effect, jobs)
        self._edit_status(run, graph, jobs, before=before if before and before.version < run.version else None)
        publish_board(self, run, redelivered=False)  # the pinned board issue, if what it shows changed
        follow_request(self, run)  # a run on a request issue: its label, and the run that waits on it (SPEC U3)
        return run

    def _carry_out(self, run: Run, effect: fx.Effect, jobs: dict[int, str]) -> Run:
        """One effect on GitHub; the run as it is after (a pull request or a sent event is linked to it)."""
        issue = int(run.links.get("issue", "0"))
        mark = effect_mark(run, effect)
        match effect:
            case fx.DispatchMission() | fx.AskDecision() | fx.AskAdvisor():
                capability = effect.capability if isinstance(effect, fx.DispatchMission) else "default"
                url = dispatch(self, run, effect.seq, capability)
                if url:
                    jobs[effect.seq] = url
            case fx.OpenPullRequest():
                run = satellites.open_pulls(self, open_pull(self, run, draft=True), draft=True)
            case fx.ReadyPullRequest():
                run = satellites.open_pulls(self, ready_pull(self, run), draft=False)
            case fx.OpenGate():
                request_review(self, run)
            case fx.PostMessage(text=text) | fx.Escalate(decision=text):
                if mark and issue:
                    self.api.comment(self.repo, issue, f"{text}\n\n{mark}")
            case fx.FileRequest():
                run = self._file_request(run, effect, issue, mark or "")
            case fx.EmitEvent():
                self.api.repository_dispatch(self.repo, effect.name, {"run": run.id, "stage": effect.stage})
                run = self._record_event_sent(run)
            case fx.Finish():
                if issue:
                    self.api.remove_label(self.repo, issue, RUNNING_LABEL)
                    self.api.add_labels(self.repo, issue, [f"interlock:{effect.status.value}"])
            case _:
                assert_never(effect)
        return run

    def _record_event_sent(self, run: Run) -> Run:
        """A graph event leaves nothing on GitHub to find again: the record says which hop's event was sent."""
        hop = run.hop_count

        def sent(current: Run) -> Event:
            links = {EVENTS_SENT: str(max(hop, events_sent(current)))}
            return Linked(key=f"{current.id}/events/{hop}", at=current.updated_at, links=links)

        return self.record(run.id, sent).run

    def reconcile(self, run: Run, graph: Graph, key: str | None = None) -> Run:
        """A redelivery of an event already applied: carry out every effect the saved record still owes
        (``owed_effects``) that GitHub does not show done, each once — the awaited job, the gate's pull
        request, review request and message, the ready pull request, the graph event, the question, the
        request filed upstream, the decision, the labels — then the status comment, if it changed. Only
        redeliveries pay for these reads (``app/github/seen.py`` says how each is found). First, for the
        redelivery of event ``key``, the comments of the transitions since it that the issue lacks (issue 28)."""
        # only the comments since the run began can carry its marks: on an issue of thousands, those are read
        seen = Seen(self.api, self.repo, int(run.links.get("issue", "0")), after=since(run.created_at))
        jobs: dict[int, str] = {}
        owed = owed_effects(run, graph)
        if key is not None and seen.issue:
            self._post_earlier(run, key, seen, {effect_mark(run, effect) for effect in owed})
        for effect in owed:
            done, run = self._shows_done(run, effect, seen, jobs)
            if not done:
                run = self._carry_out(run, self._exact(run, effect), jobs)
        self._show_record(run, graph, jobs, seen)
        publish_board(self, run, redelivered=True)
        follow_request(self, run)
        return run

    def _post_earlier(self, run: Run, key: str, seen: Seen, current: set[str | None]) -> None:
        """The comments that transitions since event ``key`` owe and the issue does not show, oldest first; those
        the record still owes itself are left to ``owed_effects``, so each is posted once."""
        for mark, text in earlier_messages(self.api, self.repo, self.store.branch, run, key, self.owed_key):
            if mark not in current and not seen.posted(mark):
                self.api.comment(self.repo, seen.issue, f"{text}\n\n{mark}")

    def _show_record(self, run: Run, graph: Graph, jobs: dict[int, str], seen: Seen) -> None:
        """What the issue shows of the record itself rather than of a transition's effects (those are all
        ``owed_effects``): the running label of a live run, put there at start, and the status comment."""
        if self.is_live(run) and seen.issue and RUNNING_LABEL not in seen.labels():
            self.api.add_labels(self.repo, seen.issue, [RUNNING_LABEL])
        self._edit_status(run, graph, jobs, seen)

    def _shows_done(self, run: Run, effect: fx.Effect, seen: Seen, jobs: dict[int, str]) -> tuple[bool, Run]:
        """Whether GitHub (for a graph event: the record) shows ``effect`` carried out. An open pull request
        of the run's branch that the record does not know yet is linked to the run on the way."""
        match effect:
            case fx.DispatchMission() | fx.AskDecision() | fx.AskAdvisor():
                found, url = job_of(self, run, effect.seq)
                if url:
                    jobs[effect.seq] = url  # the status comment keeps the link to the job's log
                return found, run
            case fx.OpenPullRequest():  # a satellite without a pull request is asked again: its answer may be lost
                run = link_open_pull(self, run)
                return "pr" in run.links and not satellites.unlinked(run), run
            case fx.ReadyPullRequest():
                run = link_open_pull(self, run)
                pull = self.api.pull(self.repo, int(run.links["pr"])) if "pr" in run.links else None
                ready = pull is not None and (not pull["draft"] or pull["state"] != "open")
                return ready and not satellites.unlinked(run), run
            case fx.OpenGate():
                wanted = set(self.team_of(run).gatekeepers)
                if not wanted or "pr" not in run.links:
                    return True, run
                return wanted <= self.api.reviewers_asked(self.repo, int(run.links["pr"])), run
            case fx.Finish():
                labels = seen.labels()
                return RUNNING_LABEL not in labels and f"interlock:{effect.status.value}" in labels, run
            case fx.EmitEvent():
                return False, run  # owed only while the record does not say it was sent
            case fx.PostMessage() | fx.Escalate() | fx.FileRequest():
                mark = effect_mark(run, effect)
                return mark is None or not seen.issue or seen.posted(mark), run
            case _:
                assert_never(effect)

    def _exact(self, run: Run, effect: fx.Effect) -> fx.Effect:
        """The effect with its exact words where the journal keeps them: the decision file as it was saved
        (with the git state the engine cannot read again)."""
        if isinstance(effect, fx.Escalate):
            stored = self.store.read(decision_path(run.id))
            if stored is not None:
                return fx.Escalate(effect.reason, effect.status, stored.decode("utf-8", errors="replace"))
        return effect

    def _file_request(self, run: Run, effect: fx.FileRequest, issue: int, mark: str) -> Run:
        if (refused := refused_filing(self, run, effect, issue, mark)) is not None:  # SPEC U6: cites nothing real
            return refused
        return file_request(self, run, effect, issue, mark)  # SPEC U3, U4: app/webhooks/teams/requests.py

    def _edit_status(
        self, run: Run, graph: Graph, jobs: dict[int, str], seen: Seen | None = None, before: Run | None = None
    ) -> None:
        """The check run (SPEC W5), then the status comment when what a person must do changed since ``before``
        (``app/webhooks/checks/status_update.py``); on a redelivery, only if what it shows changed."""
        checked = show_check(self, run, graph, remembered=seen is None)  # False: no check, the comment shows all
        if checked and run.satellites:
            show_satellite_checks(self, run, graph)  # on each satellite's pull request too (SPEC U7)
        comment = run.links.get("status_comment")
        if not comment or (seen is None and checked and not needs_comment(before, run)):
            return
        anchor = head_anchor(run, self.store.heads.get(run.id, ""))  # SPEC J6: a second witness of the chain's head
        shown = seen.comment_body(int(comment)) if seen is not None else None
        anchor = settled(anchor, shown or "")  # a redelivery keeps the state commit it showed
        body = render_status(run, graph, jobs, self._roster(run), progress_on_check=checked, anchor=anchor)
        if seen is not None and shown == self.api.shown(body):
            return
        self.api.edit_comment(self.repo, int(comment), body)

    def is_live(self, run: Run) -> bool:
        return run.status not in FINAL
