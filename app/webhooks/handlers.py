"""Webhook handlers, one per (event, action): read the fields they need, call the engine through the GitHub
shell, and return an outcome. Each is thin; the rules live in the engine. A handler whose path is long hands it
to a module named by what it does: the trigger label's start (``app/webhooks/label_start.py``), a check run's
buttons (``app/webhooks/checks/actions.py``), the board's issues and commands (``app/webhooks/board/``), the
teams' queues, stops and requests (``app/webhooks/teams/``).

https://docs.github.com/en/webhooks/webhook-events-and-payloads
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from app.engine import events as ev
from app.engine.errors import EventRejected, GateRefused, RunNotFound
from app.engine.record import MissionStatus, Run, UpstreamState
from app.github.client import GitHubApp
from app.runner.outcomes import read_record, record_event
from app.store.journal import mission_path
from app.webhooks.board.closed import board_events
from app.webhooks.board.commands import board_command, on_board_issue
from app.webhooks.checks.actions import requested_action
from app.webhooks.commands import CommandError, parse_command
from app.webhooks.delivery import Delivery, at, issue_labels, login, number_at, text_at, when
from app.webhooks.gate_reviews import answer_refused, review_commit
from app.webhooks.issue_runs import apply_to_issue, issue_runs
from app.webhooks.label_start import start_issue, trigger_config
from app.webhooks.mission_jobs import has_other_job
from app.webhooks.router import Outcome, Router, default_router
from app.webhooks.shell import GitHubRuns
from app.webhooks.stored_graph import GRAPH_ERRORS, graph_refused
from app.webhooks.teams.hold import command as team_command
from app.webhooks.teams.hold import is_team_command, refuse_while_stopped, start_waiting
from app.webhooks.teams.queue import leave, tell_places
from app.webhooks.teams.requests import UPSTREAM_LINK, is_request, label_closed, own_marker, sibling, start_accepted
from app.webhooks.teams.satellites import pull_closed as landed
from app.webhooks.teams.satellites import satellite_closed
from app.webhooks.teams.supervision import supervise
from app.webhooks.upgrade_command import upgrade_and_resume, upgrade_stage

log = logging.getLogger("interlock.webhooks")
RUN_BRANCH = re.compile(r"^interlock/(?P<run>[\w-][\w.-]{0,99})$", re.ASCII)
# greedy: "(a (b))"; a stage with a control character or a slash names no mission file
JOB_TITLE = re.compile(
    r"interlock (?P<run>[\w-][\w.-]{0,99}) mission (?P<seq>\d{1,9}) \((?P<stage>[^\x00-\x1f\x7f/\\]+)\)", re.ASCII
)


class Handlers:
    def __init__(self, app: GitHubApp, library: list[Path]) -> None:
        self.app = app
        self.library = library
        self.app_slug: str | None = None  # the router's: the App's own bot user is `<slug>[bot]`

    def runs(self, delivery: Delivery) -> GitHubRuns:
        installation = delivery.require(delivery.installation_id, "installation.id", "a positive integer")
        repo = delivery.require(delivery.repository, "repository.full_name", "an owner/name")
        default = text_at(delivery.payload, "repository", "default_branch") or "main"
        return GitHubRuns(self.app, installation, repo, default, self.library)

    def register(self, router: Router) -> Router:
        self.app_slug = router.app_slug
        router.on("issues", "labeled")(self.issue_labeled)
        router.on("issues", "unlabeled")(self.issue_unlabeled)
        router.on("workflow_run", "completed")(self.job_completed)
        router.on("pull_request_review", "submitted")(self.review_submitted)
        router.on("pull_request", "closed")(self.pull_closed)
        router.on("issue_comment", "created")(self.comment_created)
        board_events(router, self.runs, self.upstream_closed)  # issues closed (the board's, else a request's), reopened
        router.on("check_run", "requested_action")(self.check_action)  # SPEC W5: a button of a run's check
        return router

    def check_action(self, delivery: Delivery) -> Outcome:
        return requested_action(delivery, self.runs, self._queue_moves, self.app.identity.app_id)

    def upstream_closed(self, delivery: Delivery) -> Outcome:
        """SPEC U3: an upstream request Interlock filed was closed — completed resumes the waiting run by
        itself, not planned escalates it. The marker in the body is text anyone can write, so it is trusted
        only on an issue the App itself opened whose number the run recorded when it filed it, and only a close
        by the App or by someone with the configured permission on that repository counts (SPEC GH9)."""
        found = own_marker(text_at(delivery.payload, "issue", "body") or "")
        if delivery.installation_id is None:
            return Outcome.IGNORED
        app_user, closer = f"{self.app_slug}[bot]", delivery.require_sender()
        if found is None or not is_request(at(delivery.payload, "issue") or {}, self.app_slug):
            return self._leave_queue(delivery)  # SPEC U5: a closed issue leaves its team's queue
        upstream = delivery.require(delivery.repository, "repository.full_name", "an owner/name")
        number = delivery.require_number("issue", "number")
        here = self.runs(delivery)
        origin = sibling(here, found.group("repo"))  # its configuration read at its default branch, its installation
        if closer != app_user and not origin.config().allows(here.api.permission(upstream, closer)):
            log.warning("ignored %s: closed by %s, who lacks the permission", delivery.describe(), closer)
            return Outcome.IGNORED  # SPEC GH9: nothing changes, a queued request stays in line
        self._leave_queue(delivery)  # SPEC U5: a request waiting in its team's queue leaves it
        completed = (text_at(delivery.payload, "issue", "state_reason") or "completed") == "completed"
        state = UpstreamState.DELIVERED if completed else UpstreamState.REJECTED
        moment = when(text_at(delivery.payload, "issue", "closed_at"))
        url = text_at(delivery.payload, "issue", "html_url")

        def event(run: Run) -> ev.Event:
            if run.links.get(UPSTREAM_LINK) != f"{upstream}#{number}":
                raise EventRejected(run.id, run.status.value, "upstream close", "not the request this run filed")
            return ev.UpstreamChanged(key=delivery.delivery_id, at=moment, state=state, id=url)

        outcome = self._apply(origin, found.group("run"), event)
        label_closed(origin, found.group("run"), f"{upstream}#{number}", state)  # SPEC U3: its request:* label
        return outcome

    def issue_labeled(self, delivery: Delivery) -> Outcome:
        """SPEC GH1: the trigger label starts a run, if the labeller may; one live run per issue, and after each
        run that ended a new one (``app/webhooks/issue_runs.py``, ``app/webhooks/label_start.py``)."""
        label = text_at(delivery.payload, "label", "name")
        if not label or delivery.installation_id is None:
            return Outcome.IGNORED
        issue = delivery.require_number("issue", "number")
        runs = self.runs(delivery)
        config = trigger_config(runs, delivery, issue, label)  # invalid: raised, the issue told why
        if label != config.trigger_label:
            return Outcome.IGNORED
        user = delivery.require_sender()
        # the App's own starts (auto-accepted requests, SPEC U4; supervision, SPEC U6) need no person: only they
        # reach here as the App, since the router drops the App's real events before the handlers
        if user != f"{self.app_slug}[bot]" and not config.allows(runs.api.permission(runs.repo, user)):
            refusal = f"@{user} only people with {config.permission} permission can start an Interlock run."
            runs.api.comment(runs.repo, issue, f"{refusal} Nothing was started.")
            return Outcome.HANDLED
        return start_issue(runs, delivery, issue, user, self.app_slug)

    def _queue_moves(self, runs: GitHubRuns, run: Run) -> None:
        """SPEC U5: a run of a team with a limit ended, however it ended: the next waiting triggers start, by the
        label's own start path, and the others are told their new places. A start that fails leaves its trigger at
        the head of the queue; the redelivery of this event tries again."""
        if runs.is_live(run):
            return
        supervise(self, runs, run)  # SPEC U6: the teams that set `onRunEnd` supervise it
        team = runs.team_of(run)
        about = int(run.links.get("issue") or 0) or None  # told if the queue's file cannot be read
        if team.concurrency is not None:  # a stopped team's head queues again (SPEC H4): nothing starts
            start_waiting(runs, team, self.issue_labeled, about)

    def issue_unlabeled(self, delivery: Delivery) -> Outcome:
        """SPEC U5: the trigger label removed from a waiting issue takes it out of its team's queue."""
        if (
            delivery.installation_id is None
            or text_at(delivery.payload, "label", "name") != self.runs(delivery).config().trigger_label
        ):
            return Outcome.IGNORED
        return self._leave_queue(delivery)

    def _leave_queue(self, delivery: Delivery) -> Outcome:
        runs, issue = self.runs(delivery), delivery.require_number("issue", "number")
        left = False
        for team in runs.teams():
            if team.concurrency is not None and leave(runs, team, issue):
                tell_places(runs, team, issue)
                left = True
        return Outcome.HANDLED if left else Outcome.IGNORED

    def job_completed(self, delivery: Delivery) -> Outcome:
        """SPEC GH3: read the mission record the job stored; none means the mission did not end done."""
        job = at(delivery.payload, "workflow_run") or {}
        found = JOB_TITLE.fullmatch(text_at(job, "display_title") or "")
        if found is None or delivery.installation_id is None or text_at(job, "event") != "workflow_dispatch":
            return Outcome.IGNORED  # a push or pull-request run titled like a mission is not one
        runs = self.runs(delivery)
        if text_at(job, "path") != f".github/workflows/{runs.config().workflow}":
            return Outcome.IGNORED
        if text_at(job, "head_branch") not in (None, f"interlock/{found.group('run')}"):
            return Outcome.IGNORED  # a mission runs on its run's branch
        run_id, seq, stage = found.group("run"), int(found.group("seq")), found.group("stage")
        record_file = mission_path(run_id, seq, stage)
        conclusion = text_at(job, "conclusion") or "unknown"
        if conclusion == "cancelled" and has_other_job(runs, found.group(0), text_at(job, "head_branch") or ""):
            return Outcome.IGNORED  # the concurrency group cancelled a duplicate; the other job will report
        finished = when(text_at(job, "updated_at"))

        def event(run: Run) -> ev.Event:
            record = read_record(runs.store.read(record_file))
            if record is None:  # a mission, decision or advice that did not end done: no record, no answer
                why = f"The job ended {conclusion} without storing a mission record: {text_at(job, 'html_url') or ''}"
                status = MissionStatus.CANCELLED if conclusion == "cancelled" else MissionStatus.CRASHED
                record = {"status": status.value, "answer": why}
            return record_event(run, record, delivery.delivery_id, finished, seq)

        return self._apply(runs, run_id, event, also=(record_file,))

    def review_submitted(self, delivery: Delivery) -> Outcome:
        """SPEC GH5: approved approves, changes_requested amends; only people with write permission, after the
        gate opened; other reviews are ignored."""
        run_id = self._run_of_pull(delivery)
        state = (text_at(delivery.payload, "review", "state") or "").lower()
        if run_id is None or state not in ("approved", "changes_requested"):
            return Outcome.IGNORED
        runs = self.runs(delivery)
        reviewer = text_at(delivery.payload, "review", "user", "login")  # absent: the sender reviewed
        user = delivery.require(login(reviewer) if reviewer else delivery.sender, "review.user.login", "a GitHub login")
        if not runs.config().allows(runs.api.permission(runs.repo, user)):
            return Outcome.IGNORED
        note = text_at(delivery.payload, "review", "body") or ""
        submitted = when(text_at(delivery.payload, "review", "submitted_at"))
        number, review_id = (
            number_at(delivery.payload, "pull_request", "number"),
            number_at(delivery.payload, "review", "id"),
        )
        if state == "changes_requested" and number is not None and review_id is not None:
            inline = runs.api.review_comments(runs.repo, number, review_id)
            note = "\n".join(filter(None, [note, *inline]))
        note = runs.api.redactor.text(note)  # a person's text: masked where it enters (issue 11)
        commit, key = review_commit(delivery.payload), delivery.delivery_id  # SPEC H5: what was reviewed

        def event(run: Run) -> ev.Event:
            if run.gate is not None and submitted < run.gate.opened_at:
                raise EventRejected(run.id, run.status.value, "review", "submitted before the gate opened")
            if state == "approved":
                return ev.GateApproved(key=key, at=submitted, by=user, note=note, commit=commit)
            return ev.GateAmended(key=key, at=submitted, by=user, note=note or "(changes requested)", commit=commit)

        try:
            return self._apply(runs, run_id, event)
        except GateRefused as refused:  # SPEC H5, H6: another commit, or the requester's own: answered once
            return answer_refused(runs, delivery, run_id, user, refused)

    def pull_closed(self, delivery: Delivery) -> Outcome:
        """SPEC GH6: merged is done; closed without merge is cancelled. With satellites (U7): done when all merged."""
        run_id = self._run_of_pull(delivery)
        if run_id is None:
            return Outcome.IGNORED
        merged = at(delivery.payload, "pull_request", "merged") is True
        moment = when(text_at(delivery.payload, "pull_request", "closed_at"))
        kind = ev.Merged if merged else ev.Closed
        closed = kind(key=delivery.delivery_id, at=moment, by=delivery.sender or "")
        opened = lambda i, repo, default: GitHubRuns(self.app, i, repo, default, self.library)  # noqa: E731
        return satellite_closed(self.app, delivery, closed, opened, self._apply) or self._apply(
            self.runs(delivery), run_id, lambda run: landed(run, closed)
        )

    def comment_created(self, delivery: Delivery) -> Outcome:
        """SPEC GH7: ``/interlock …`` commands from people with write permission; anything else gets a reply."""
        body = text_at(delivery.payload, "comment", "body") or ""
        if not body.lstrip().startswith("/interlock") or delivery.installation_id is None:
            return Outcome.IGNORED
        issue = delivery.require_number("issue", "number")
        runs = self.runs(delivery)
        user = delivery.require_sender()
        if not runs.config().allows(runs.api.permission(runs.repo, user)):
            runs.api.comment(
                runs.repo,
                issue,
                f"@{user} only people with {runs.config().permission} permission "
                "can steer Interlock runs; nothing changed.",
            )
            return Outcome.HANDLED
        moment = when(text_at(delivery.payload, "comment", "created_at"))
        if is_team_command(body):  # SPEC H4: `/interlock team stop|start [TEAM]`
            return team_command(runs, delivery, issue, user, moment, self.issue_labeled)
        if on_board_issue(delivery, self.app_slug):  # issue 14: `/interlock pause|resume|retry|cancel RUN` on the board
            return board_command(runs, delivery, issue, user, moment, self._queue_moves)
        said, key = runs.api.redactor.text(body), delivery.delivery_id  # a person's text: masked
        try:
            if (upgrade := upgrade_stage(said))[0]:  # SPEC J7: `/interlock resume --upgrade [at STAGE]`
                moved = upgrade_and_resume(runs, issue, key, moment, user, upgrade[1], issue_labels(delivery))
                self._queue_moves(runs, moved)
            else:
                make = refuse_while_stopped(runs, parse_command(said, key, moment, user))
                self._queue_moves(runs, apply_to_issue(runs, issue, key, make))
        except (CommandError, EventRejected, RunNotFound) as exc:
            runs.api.comment(runs.repo, issue, f"@{user} {exc}; nothing changed.")
        except GRAPH_ERRORS as exc:
            raise graph_refused(runs, issue_runs(runs, issue)[-1].id, exc, issue) from None
        return Outcome.HANDLED

    def after_command(self, runs: GitHubRuns, run: Run) -> None:
        """What follows a person's command besides its transition, from a comment or the web board (SPEC U5)."""
        self._queue_moves(runs, run)

    def _run_of_pull(self, delivery: Delivery) -> str | None:
        match = RUN_BRANCH.match(text_at(delivery.payload, "pull_request", "head", "ref") or "")
        return match.group("run") if match and delivery.installation_id is not None else None

    def _apply(self, runs: GitHubRuns, run_id: str, make: Any, also: tuple[str, ...] = ()) -> Outcome:
        try:
            run = runs.apply(run_id, make, also=also)
        except GateRefused:
            raise  # a review the gate does not count: the reviewer is told why (review_submitted)
        except (RunNotFound, EventRejected):
            return Outcome.IGNORED
        except GRAPH_ERRORS as exc:  # the run's stored graph cannot be read: told on its issue, answered 422
            raise graph_refused(runs, run_id, exc) from None
        self._queue_moves(runs, run)
        start_accepted(runs, run, self.app_slug, self.issue_labeled)  # SPEC U4: to a team that auto-accepts
        return Outcome.HANDLED


def service_router(app: GitHubApp, library: list[Path], app_slug: str | None) -> Router:
    router = Handlers(app, library).register(default_router(app_slug))
    router.limiter_status = app.limiter_status
    return router
