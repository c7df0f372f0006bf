"""A team's stop and start on GitHub (SPEC H4): ``/interlock team stop [TEAM]`` and ``/interlock team start [TEAM]``.

Stopping a team stays human whatever the team's autopilot: only a person with the configured permission may say it,
and only ``team start`` lifts it. The stop is kept in ``teams/<team>.json`` on the state branch (compare-and-swap,
``change_json``), so it survives restarts and is seen by every service replica. While a team is stopped:

- every live run of the team is held at its next transition (``StopRequested(hold=True)``, SPEC J4): a mission in
  flight finishes and its run stops before the next one; a run at a gate, waiting for an answer or for upstream
  takes what it waits for and stops there. No new mission is dispatched. A run awaiting its merge is left alone:
  nothing more is dispatched for it, and the merge is a person's.
- queued issues do not start, and a new trigger of the team queues instead of starting (``queues/<team>.json``).
- a person's ``/interlock resume``, ``route`` or ``deliver`` of a run of the team is refused.

``team start`` resumes the runs the stop held (a run a person stopped for its own reason stays stopped), then
starts queued issues up to the team's concurrency. Each run's issue is told both, once; a redelivered command
changes nothing (the stop file keeps the deliveries it applied, each run event carries the delivery in its key).
A run whose start raced the stop is held by its start, which reads the stop again once it is recorded. A stop
file that cannot be read is left as it is and refuses the delivery (422) with what to do, like a queue file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from app.engine import events as ev
from app.engine.errors import EventRejected, RunNotFound
from app.engine.quoted import quoted
from app.engine.record import Run, Status
from app.github.config import ConfigInvalid
from app.github.status import HELD_BY, HELD_TEAM
from app.github.teams import TeamSettings, TeamUnknown, labelled_team
from app.store.github import StateFileUnreadable, first_problem
from app.store.journal import RUNS_FOLDER, STATE_BRANCH
from app.webhooks.commands import CommandError
from app.webhooks.delivery import Delivery, list_at, text_at
from app.webhooks.issue_runs import issue_runs
from app.webhooks.live_mission import refuse_live_mission
from app.webhooks.router import Outcome
from app.webhooks.shell import GitHubRuns
from app.webhooks.teams.queue import change, head_to_start, started, still_running, tell_places, waiting_text

COMMANDS_KEPT = 50  # the deliveries a stop file remembers, enough for any redelivery GitHub makes
SNAPSHOT_FILES = 50  # run records read per call when looking for a team's live runs
HOLDABLE = (Status.RUNNING, Status.GATE_WAIT, Status.AWAITING_INPUT, Status.AWAITING_UPSTREAM)
REFUSED_WHILE_STOPPED = (ev.Resume, ev.RouteChosen, ev.Deliver, ev.BudgetRaised)
USAGE = "`/interlock team stop [TEAM]` or `/interlock team start [TEAM]`"
StartTrigger = Callable[[Delivery], Outcome]


class TeamHold(BaseModel):
    """``teams/<team>.json``: whether the team is stopped, by whom, the runs its stop held, and the deliveries of
    the commands applied (latest last)."""

    stopped: bool = False
    by: str = ""
    held: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)


class HoldUnreadable(ConfigInvalid):
    """A team's stop file is not what Interlock writes: refused like a bad configuration (422, nothing changed,
    redelivered once a person fixed it), not a failure of GitHub (5xx), and never overwritten."""


def hold_path(team: TeamSettings) -> str:
    return f"teams/{team.name}.json"


def parsed_hold(team: TeamSettings, value: Any, head: str | None = None) -> TeamHold:
    """The stop file's JSON value as a ``TeamHold``; anything else refuses the delivery with what to do."""
    try:
        return TeamHold.model_validate(value) if value is not None else TeamHold()
    except ValidationError as exc:
        reason = f"not a team's stop file ({exc.error_count()} problem(s): {first_problem(exc)})"
        raise unreadable(team, StateFileUnreadable(hold_path(team), reason, head)) from None


def unreadable(team: TeamSettings, exc: StateFileUnreadable) -> HoldUnreadable:
    return HoldUnreadable(
        f"Interlock cannot read the stop file of team `{team.name}`: {exc}. Nothing was changed, and the file is "
        f"left as it is. To fix it, restore the file from the branch's history (`git log {STATE_BRANCH} -- "
        f'{exc.path}`) or correct it by hand: `{{"stopped": true|false, "by": "login", "held": [run ids], '
        '"commands": [delivery ids]}`; then redeliver the failed delivery (`interlock redeliver`).'
    )


def is_team_command(body: str) -> bool:
    words = body.strip().split("\n", 1)[0].split()
    return len(words) > 1 and words[1].lower() == "team"


def is_stopped(runs: GitHubRuns, team: TeamSettings) -> bool:
    """Whether the team is stopped, read at the state branch's head: one GraphQL call (a start pays one call more)."""
    return read_hold(runs, team).stopped


def read_hold(runs: GitHubRuns, team: TeamSettings) -> TeamHold:
    snapshot = runs.api.snapshot(runs.repo, STATE_BRANCH, [hold_path(team)])
    data = snapshot.files.get(hold_path(team)) if snapshot else None
    try:
        value = json.loads(data) if data else None
    except (ValueError, RecursionError) as exc:
        raise unreadable(team, StateFileUnreadable(hold_path(team), f"not JSON ({exc})")) from None
    return parsed_hold(team, value)


def hold_if_stopped(runs: GitHubRuns, team: TeamSettings, run: Run) -> None:
    """SPEC H4: the stop is read again once a run's start is recorded. A stop recorded between the check before
    the start and the start itself listed the team's live runs without this one: it is held here, as the stop
    would have held it (its key is the stop's, so a run both hold is held once), and ``team start`` resumes it."""
    hold = read_hold(runs, team)
    if hold.stopped and hold.commands and runs.is_live(run):
        Act(runs, team, hold.commands[-1], hold.by, datetime.now(UTC)).hold_all([run])


def held_copy(team: TeamSettings) -> TeamSettings:
    """The team as the queue sees it while stopped: no running place free, so a trigger waits in line."""
    return team.model_copy(update={"concurrency": 0})


def held_text(team: TeamSettings, place: int) -> str:
    return (
        f"Interlock queued this issue: team `{team.name}` is stopped. Place in the queue: **{place}**. It starts "
        "when a person says `/interlock team start`; remove the label or close the issue to leave the queue."
    )


def refuse_while_stopped(runs: GitHubRuns, make: Callable[[Run], ev.Event]) -> Callable[[Run], ev.Event]:
    """``make`` refused for a resume, route or deliver of a run whose team is stopped: stopping stays human; and
    for a resume of a mission whose job still runs (``app/webhooks/live_mission.py``): never two jobs for one.
    Every person's command on GitHub goes through here: a comment, the web board, a check run's button."""

    def guarded(run: Run) -> ev.Event:
        event = make(run)
        team = runs.team_of(run)
        if isinstance(event, REFUSED_WHILE_STOPPED) and is_stopped(runs, team):
            why = f"team `{team.name}` is stopped; `/interlock team start` resumes its runs"
            raise EventRejected(run.id, run.status.value, type(event).__name__, why)
        refuse_live_mission(runs, run, event)
        return event

    return guarded


def command(
    runs: GitHubRuns, delivery: Delivery, issue: int, user: str, moment: datetime, start_trigger: StartTrigger
) -> Outcome:
    """A writer's ``/interlock team stop|start [TEAM]`` (the caller checked the permission)."""
    body = runs.api.redactor.text(text_at(delivery.payload, "comment", "body") or "")  # a person's text: masked
    words = body.strip().split("\n", 1)[0].split()
    verb, names = (words[2].lower() if len(words) > 2 else ""), words[3:]
    try:
        if verb not in ("stop", "start") or len(names) > 1:
            raise CommandError(f"{quoted(' '.join(words))} is not a team command ({USAGE})")
        team = which_team(runs, delivery, issue, names[0] if names else None)
    except CommandError as exc:
        runs.api.comment(runs.repo, issue, f"@{user} {exc}; nothing changed.")
        return Outcome.HANDLED
    act = Act(runs, team, delivery.delivery_id, user, moment)
    reply = act.stop() if verb == "stop" else act.start(start_trigger)
    if reply:
        say_once(runs, issue, f"{reply}\n\n<!-- interlock:team {verb} delivery={act.key} -->")
    return Outcome.HANDLED


def which_team(runs: GitHubRuns, delivery: Delivery, issue: int, name: str | None) -> TeamSettings:
    """The team named, else the team of the issue's run, else of its ``team:`` label, else the only team."""
    teams = runs.teams()
    known = ", ".join(f"`{team.name}`" for team in teams)
    if name is not None:
        found = next((team for team in teams if team.name == name), None)
        if found is None:
            raise CommandError(f"{quoted(name, 40)} names no team of this repository (its teams: {known})")
        return found
    earlier = issue_runs(runs, issue)
    if earlier:
        return runs.team_of(earlier[-1])
    labels = [text_at(item, "name") or "" for item in list_at(delivery.payload, "issue", "labels")]
    try:
        labelled = labelled_team(teams, labels)
    except TeamUnknown as exc:
        raise CommandError(str(exc)) from None
    if labelled is not None or len(teams) == 1:
        return labelled or teams[0]
    raise CommandError(f"this issue has no run and no `team:` label: name the team ({USAGE}; teams: {known})")


class Act:
    """One team command applied: each step can be repeated by a redelivery and changes nothing the second time."""

    def __init__(self, runs: GitHubRuns, team: TeamSettings, key: str, user: str, moment: datetime) -> None:
        self.runs, self.team, self.key, self.user, self.moment = runs, team, key, user, moment

    def _change(self, edit: Callable[[TeamHold], TeamHold]) -> TeamHold:
        message = f"interlock: team {self.team.name} stop/start"
        try:
            _, saved = self.runs.store.change_model(hold_path(self.team), TeamHold, edit, message, "a team's stop file")
        except StateFileUnreadable as exc:  # refused, the file left as it is
            raise unreadable(self.team, exc) from None
        return saved

    def _record(self, stopped: bool) -> TeamHold | None:
        """The stop file with this command applied; ``None`` when it changes nothing (a redelivery after a later
        command, or a stop of a stopped team, a start of a running one)."""

        def edit(hold: TeamHold) -> TeamHold:
            if self.key in hold.commands or hold.stopped == stopped:
                return hold
            hold.stopped, hold.by = stopped, self.user
            hold.commands = [*hold.commands, self.key][-COMMANDS_KEPT:]
            return hold

        hold = self._change(edit)
        return hold if hold.commands[-1:] == [self.key] else None

    def stop(self) -> str | None:
        if self._record(stopped=True) is None:
            return self._unchanged("stopped")
        held = self.hold_all(list(live_runs(self.runs, self.team)))
        return (
            f"Team `{self.team.name}` is stopped by @{self.user}: {listed(held)} held at the next transition (no new "
            "mission starts), queued issues wait, and new triggers of the team queue. "
            "`/interlock team start` resumes them."
        )

    def hold_all(self, found: list[Run]) -> list[Run]:
        """The runs that can be held are held, and kept in the stop file for ``team start`` while this stop is
        the latest command."""
        held = [run for run in found if run.status in HOLDABLE]
        for run in held:
            self._hold(run)

        def keep(hold: TeamHold) -> TeamHold:
            if hold.commands[-1:] == [self.key]:
                hold.held = list(dict.fromkeys([*hold.held, *(run.id for run in held)]))
            return hold

        self._change(keep)
        return held

    def _hold(self, run: Run) -> None:
        links = {HELD_TEAM: self.team.name, HELD_BY: self.user}  # shown by the status comment (SPEC H4)
        stop = ev.StopRequested(key=f"{self.key}/{run.id}", at=self.moment, by=self.user, hold=True)
        try:
            self.runs.apply(run.id, lambda r: stop)
            held = self.runs.apply(
                run.id, lambda r: ev.Linked(key=f"{self.key}/held/{r.id}", at=self.moment, links=links)
            )
        except (EventRejected, RunNotFound):
            return  # it ended or finished meanwhile: nothing to hold
        note = (
            f"Team `{self.team.name}` was stopped by @{self.user}: this run is held at its next transition and no "
            "new mission starts. `/interlock team start` resumes it."
        )
        say_once(self.runs, int(held.links.get("issue", "0")), f"{note}\n\n<!-- interlock:held {self.key} {run.id} -->")

    def start(self, start_trigger: StartTrigger) -> str | None:
        hold = self._record(stopped=False)
        if hold is None:
            return self._unchanged("running")
        resumed = [run for run in (self._release(run_id) for run_id in hold.held) if run is not None]

        def forget(hold: TeamHold) -> TeamHold:
            if hold.commands[-1:] == [self.key]:
                hold.held = []
            return hold

        self._change(forget)
        start_waiting(self.runs, self.team, start_trigger)
        return (
            f"Team `{self.team.name}` is started again by @{self.user}: {listed(resumed)} resumed, queued issues start."
        )

    def _release(self, run_id: str) -> Run | None:
        """A held run goes on: resumed where its hold stopped it, or its hold withdrawn before it took effect."""

        def release(run: Run) -> ev.Event:
            common: dict[str, Any] = {"key": f"{self.key}/{run.id}", "at": self.moment, "by": self.user}
            stopped = run.status is Status.INTERRUPTED
            return ev.Resume(**common) if stopped else ev.StopWithdrawn(**common)

        links = {HELD_TEAM: "", HELD_BY: ""}
        try:
            self.runs.record(
                run_id, lambda r: ev.Linked(key=f"{self.key}/released/{r.id}", at=self.moment, links=links)
            )
            run = self.runs.apply(run_id, release)
        except (EventRejected, RunNotFound):
            return None  # ended meanwhile (abandoned, merged): nothing to resume
        note = f"Team `{self.team.name}` was started again by @{self.user}: this run goes on."
        say_once(
            self.runs, int(run.links.get("issue", "0")), f"{note}\n\n<!-- interlock:released {self.key} {run.id} -->"
        )
        return run

    def _unchanged(self, state: str) -> str | None:
        """The reply to a command that changes nothing: none to a redelivery, else why."""
        if self.key in self._change(lambda hold: hold).commands:
            return None  # a redelivery after a later command: the later one stands
        return f"@{self.user} team `{self.team.name}` is {state} already; nothing changed."


def start_waiting(runs: GitHubRuns, team: TeamSettings, start_trigger: StartTrigger, about: int | None = None) -> None:
    """The queued triggers start by the label's own start path, up to the team's concurrency (all of them for a
    team without a limit); the others are told their places. A head refused because its issue runs already
    leaves the line, and the next is tried. ``about``: the issue told if the queue's file
    cannot be read."""
    if team.concurrency is None:
        for entry in list(change(runs, team, lambda queue: queue, about)[1].waiting):
            start_trigger(Delivery("issues", entry.delivery, entry.payload))
            started(runs, team, entry.issue)
        return
    tried: set[int] = set()
    while (head := head_to_start(runs, team, about)) is not None and head.issue not in tried:
        tried.add(head.issue)
        if start_trigger(Delivery("issues", head.delivery, head.payload)) is Outcome.IGNORED and still_running(
            runs, head.issue
        ):  # SPEC U5, GH1: refused, it runs already (in another team, or its start's dequeue failed): out of line
            started(runs, team, head.issue)
    tell_places(runs, team, about)


def live_runs(runs: GitHubRuns, team: TeamSettings) -> Iterator[Run]:
    """Every live run of ``team``, read from the records on the state branch (an unreadable record is skipped)."""
    head = runs.api.ref(runs.repo, STATE_BRANCH)
    names = (runs.api.folder(runs.repo, RUNS_FOLDER, head) or []) if head else []
    paths = [f"{RUNS_FOLDER}/{name}" for name in names if name.endswith(".json")]
    for first in range(0, len(paths), SNAPSHOT_FILES):
        snapshot = runs.api.snapshot(runs.repo, STATE_BRANCH, paths[first : first + SNAPSHOT_FILES])
        for text in (snapshot.files if snapshot else {}).values():
            try:
                run = Run.from_journal(text or "")
            except ValidationError:
                continue
            if runs.is_live(run) and runs.team_of(run).name == team.name:
                yield run


def listed(found: list[Run]) -> str:
    issues = ", ".join(f"#{run.links.get('issue', '?')}" for run in found)
    return f"{len(found)} run(s) ({issues})" if found else "no run"


def say_once(runs: GitHubRuns, issue: int, text: str) -> None:
    """A comment marked by its last line: a redelivery that would post it again posts nothing."""
    if issue:
        runs.api.comment_once(runs.repo, issue, text, text.rsplit("\n", 1)[-1])


def queue_terms(team: TeamSettings, held: bool) -> tuple[TeamSettings, Callable[[TeamSettings, int], str]]:
    """How a trigger is queued: while its team is stopped, with no running place free and the stop's words."""
    return (held_copy(team), held_text) if held else (team, waiting_text)
