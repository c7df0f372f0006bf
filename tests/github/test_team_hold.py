# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A team's stop and start on GitHub (SPEC H4, issue 13 item 4): `/interlock team stop|start [TEAM]` by a writer holds
every live run of the team at its next transition, queues its triggers, survives a restart, and resumes them; the
autopilot of each team passes that team's graph gates only, never the merge."""

from __future__ import annotations

import json
from typing import Any

from app.engine.record import Status
from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import (  # noqa: F401 - fixture
    REPO,
    SMALL_GRAPH,
    World,
    example,
    merged_payload,
    retry_waits,
    world,
)
from tests.github.test_team_queue import configure, restart, said
from tests.helpers import doc

TEAMS = """base: develop
default_graph: small
gatekeepers: [carol]
teams:
  core:
    concurrency: {n}
  docs:
    graphsets: [teams/docs]
    defaultGraph: notes
    autopilot: true
"""
NOTES = {**SMALL_GRAPH, "name": "notes"}


def with_teams(world: World, n: int = 2) -> None:
    configure(world, TEAMS.format(n=n))
    world.fake.commit_file(REPO, "main", "teams/docs/notes.json", json.dumps(NOTES))


def trigger(world: World, issue: int, *labels: str) -> Outcome:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": issue, "title": f"Feature {issue}"}
    payload["issue"]["labels"] = [{"name": name} for name in ("feature-request", *labels)]
    return world.deliver("issues", payload)


def command(world: World, issue: int, body: str, user: str = "alice", delivery: str | None = None) -> Outcome:
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue, "labels": []}
    payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": user, "type": "User"}
    return world.deliver("issue_comment", payload, delivery=delivery)


def run_of(world: World, issue: int) -> Any:
    return world.runs().store.find(f"issue-{issue}")


def status_of(world: World, issue: int) -> str:
    return str(world.fake.comments[int(run_of(world, issue).links["status_comment"])]["body"])


def hold_file(world: World, team: str = "core") -> Any:
    data = world.runs().api.file(REPO, f"teams/{team}.json", "interlock/state")
    return json.loads(data) if data else None


def dispatched(world: World) -> list[str]:
    return [d["inputs"]["run"] for d in world.fake.dispatches]


def test_a_stop_holds_the_teams_live_runs_at_their_next_transition_and_start_resumes_them(world: World) -> None:
    # SPEC H4, J4: two runs of core held (one at its gate, one with a mission in flight); docs' run goes on
    with_teams(world)
    trigger(world, 1)
    trigger(world, 2)
    trigger(world, 3, "team:docs")
    world.job_done(1, 1, "build", "built it")
    assert run_of(world, 1).status is Status.GATE_WAIT
    assert command(world, 1, "/interlock team stop") is Outcome.HANDLED
    assert hold_file(world)["stopped"] is True and sorted(hold_file(world)["held"]) == ["issue-1", "issue-2"]
    assert run_of(world, 1).status is Status.GATE_WAIT and run_of(world, 1).stop_requested  # held, gate kept
    assert run_of(world, 2).status is Status.RUNNING and run_of(world, 2).stop_requested
    assert not run_of(world, 3).stop_requested
    assert "**Held**: team `core` was stopped by @alice" in status_of(world, 1)
    assert "`/interlock team start` resumes every held run" in status_of(world, 2)
    for issue in (1, 2):
        assert sum("Team `core` was stopped by @alice: this run is held" in text for text in said(world, issue)) == 1
    assert any("Team `core` is stopped by @alice: 2 run(s) (#1, #2) held" in text for text in said(world, 1))
    world.review(1, "approved")  # the approval is taken, and the run stops before the next mission
    world.job_done(2, 1, "build", "built it")  # the mission in flight returns: the run stops
    world.job_done(3, 1, "build", "notes written")  # docs is not stopped: its autopilot passes, its next mission goes
    assert (run_of(world, 1).status, run_of(world, 1).stage) == (Status.INTERRUPTED, "review")
    assert run_of(world, 2).status is Status.INTERRUPTED
    assert dispatched(world) == ["issue-1", "issue-2", "issue-3", "issue-3"]
    assert "**Held**" in status_of(world, 1) and not any("Held" in text for text in said(world, 3))
    command(world, 2, "/interlock team start")
    assert hold_file(world) == {**hold_file(world), "stopped": False, "held": []}
    assert (run_of(world, 1).status, run_of(world, 2).status) == (Status.RUNNING, Status.RUNNING)
    assert dispatched(world)[4:] == ["issue-1", "issue-2"] and world.fake.dispatches[4]["inputs"]["stage"] == "review"
    assert "**Held**" not in status_of(world, 1) and "Nothing: the run is working" in status_of(world, 1)
    for issue in (1, 2):
        assert sum("Team `core` was started again by @alice: this run goes on." in t for t in said(world, issue)) == 1


def test_queued_issues_and_new_triggers_wait_while_the_team_is_stopped(world: World) -> None:
    # SPEC H4, U5: a run's end starts no queued issue of a stopped team; a new trigger queues; start starts them
    with_teams(world, n=1)
    trigger(world, 1)
    trigger(world, 2)
    command(world, 1, "/interlock team stop")
    command(world, 1, "/interlock abandon")  # a person may still end a run: its place is free, yet nothing starts
    assert run_of(world, 1).status is Status.CANCELLED and run_of(world, 2) is None
    trigger(world, 4)
    assert run_of(world, 4) is None and (REPO, "interlock/issue-4") not in world.fake.refs
    assert any("team `core` is stopped. Place in the queue: **2**" in text for text in said(world, 4))
    command(world, 1, "/interlock team start")
    assert run_of(world, 2) is not None and run_of(world, 4) is None  # concurrency 1: the head of the queue starts
    assert any("Place in the queue: **1**" in text for text in said(world, 4))
    assert dispatched(world) == ["issue-1", "issue-2"]


def test_a_stopped_team_without_a_limit_queues_its_triggers_and_starts_them_all(world: World) -> None:
    # SPEC H4: the implicit team of a file without `teams:` is stopped too, and starts every queued trigger
    command(world, 7, "/interlock team stop")
    assert hold_file(world, "default")["stopped"] is True
    trigger(world, 1)
    trigger(world, 2)
    assert run_of(world, 1) is None and run_of(world, 2) is None
    command(world, 7, "/interlock team start")
    assert run_of(world, 1) is not None and run_of(world, 2) is not None
    assert world.runs().api.file(REPO, "queues/default.json", "interlock/state") is not None
    assert json.loads(world.runs().api.file(REPO, "queues/default.json", "interlock/state") or b"")["waiting"] == []


def test_a_reader_cannot_stop_a_team(world: World) -> None:
    # SPEC H4, GH7: stopping is a writer's act; a reader is told so and nothing changes
    with_teams(world)
    trigger(world, 1)
    assert command(world, 1, "/interlock team stop", user="mallory") is Outcome.HANDLED
    assert hold_file(world) is None and not run_of(world, 1).stop_requested
    assert any(
        "@mallory only people with write permission" in text and "nothing changed" in text for text in said(world, 1)
    )
    trigger(world, 2)
    assert run_of(world, 2) is not None


def test_a_redelivered_command_does_nothing_twice(world: World) -> None:
    # SPEC H4, GH8: the same delivery again posts nothing, holds nothing again, and never undoes a later command
    with_teams(world)
    trigger(world, 1)
    command(world, 1, "/interlock team stop", delivery="stop-1")
    before = (len(world.fake.comments), run_of(world, 1).version)
    command(world, 1, "/interlock team stop", delivery="stop-1")
    assert (len(world.fake.comments), run_of(world, 1).version) == before
    command(world, 1, "/interlock team start", delivery="start-1")
    command(world, 1, "/interlock team stop", delivery="stop-1")  # a late redelivery: the start stands
    command(world, 1, "/interlock team start", delivery="start-1")
    assert hold_file(world)["stopped"] is False and hold_file(world)["commands"] == ["stop-1", "start-1"]
    assert not run_of(world, 1).stop_requested and run_of(world, 1).status is Status.RUNNING
    assert sum("was started again" in text for text in said(world, 1)) == 1
    command(world, 1, "/interlock team start")  # a start of a running team: said, nothing changed
    assert "@alice team `core` is running already; nothing changed." in said(world, 1)[-1]


def test_a_stop_survives_a_restart_and_refuses_a_persons_resume(world: World, settings: ServiceSettings) -> None:
    # SPEC H4: the stop is on the state branch, not in the service's memory; only `team start` lifts it
    with_teams(world)
    trigger(world, 1)
    command(world, 1, "/interlock team stop")
    restart(world, settings)
    world.job_done(1, 1, "build", "built it")
    assert run_of(world, 1).status is Status.INTERRUPTED
    command(world, 1, "/interlock resume")
    assert run_of(world, 1).status is Status.INTERRUPTED
    assert "team `core` is stopped; `/interlock team start` resumes its runs" in said(world, 1)[-1]
    trigger(world, 2)
    assert run_of(world, 2) is None and dispatched(world) == ["issue-1"]
    restart(world, settings)
    command(world, 1, "/interlock team start")
    assert run_of(world, 1).status is Status.RUNNING and run_of(world, 2) is not None


def test_a_team_command_names_its_team_or_says_what_is_wrong(world: World) -> None:
    # SPEC H4: `team stop NAME` on any issue; an unknown name or verb, or no team to default to, changes nothing
    with_teams(world)
    command(world, 5, "/interlock team stop docs")
    assert hold_file(world, "docs")["stopped"] is True and hold_file(world) is None
    command(world, 5, "/interlock team stop nobody")
    assert (
        "`nobody` names no team of this repository (its teams: `core`, `docs`); nothing changed." in said(world, 5)[-1]
    )
    command(world, 5, "/interlock team pause")
    assert "is not a team command (`/interlock team stop [TEAM]`" in said(world, 5)[-1]
    command(world, 5, "/interlock team stop")
    assert "this issue has no run and no `team:` label: name the team" in said(world, 5)[-1]
    assert hold_file(world) is None


def test_each_team_follows_its_own_autopilot_and_none_merges(world: World) -> None:
    # SPEC H4: docs' autopilot passes docs' gate and says which gate on which verdict; core's run waits for a
    # person; the autopiloted run still ends only when a person merges its pull request
    with_teams(world)
    trigger(world, 1)
    trigger(world, 2, "team:docs")
    world.job_done(1, 1, "build", "built it")
    world.job_done(2, 1, "build", "notes written")
    assert run_of(world, 1).status is Status.GATE_WAIT and not any("Autopilot" in text for text in said(world, 1))
    assert sum("Autopilot passed the gate of `build` on PASS." in text for text in said(world, 2)) == 1
    world.job_done(2, 2, "review", "fine")
    docs = run_of(world, 2)
    assert docs.status is Status.AWAITING_MERGE and world.fake.pulls[int(docs.links["pr"])]["draft"] is False
    assert world.fake.pulls[int(docs.links["pr"])].get("merged") is not True
    command(world, 2, "/interlock team stop")  # a run awaiting its merge is left as it is
    assert run_of(world, 2).status is Status.AWAITING_MERGE and hold_file(world, "docs")["held"] == []
    assert not run_of(world, 2).stop_requested and "**Held**" not in status_of(world, 2)
    world.deliver("pull_request", merged_payload("interlock/issue-2"))
    assert run_of(world, 2).status is Status.DONE


def test_a_run_a_person_stopped_stays_stopped_when_its_team_starts(world: World) -> None:
    # SPEC H4, J4: the team's start resumes only the runs its stop held
    with_teams(world)
    trigger(world, 1)
    trigger(world, 2)
    command(world, 1, "/interlock stop")
    world.job_done(1, 1, "build", "built it")
    assert run_of(world, 1).status is Status.INTERRUPTED
    command(world, 2, "/interlock team stop")
    command(world, 2, "/interlock team start")
    assert run_of(world, 1).status is Status.INTERRUPTED and run_of(world, 2).status is Status.RUNNING
    assert hold_file(world)["held"] == [] and not any("Team `core`" in text for text in said(world, 1))


def test_the_readme_says_how_a_team_stops() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("operating/service.md", "github/teams.md").split())
    for sentence in [
        "`/interlock team stop [TEAM]` and `/interlock team start [TEAM]` stop and start a whole team.",
        "by a person with the configured permission (anyone else is told so, and nothing changes);",
        "without `TEAM` the command names the team of the issue's latest run, else of its `team:` label, else the "
        "repository's only team (else the reply asks for the name).",
        "The stop is kept in `teams/<team>.json` on the state branch (with compare-and-swap), so it survives a restart",
        "While a team is stopped, each of its live runs is held at its next transition: a run whose mission is running "
        "stops when the mission returns, and a run at a gate, waiting for an answer or for its upstream request takes "
        "the approval, the answer or the upstream outcome, then stops before its next mission, `interrupted`.",
        "The status comment of a held run says so and who stopped the team.",
        "No new mission is dispatched; queued issues do not start, a new trigger of the team queues, and a person's "
        "`/interlock resume`, `route` or `deliver` of a run of the team is refused.",
        "A run awaiting its merge is left as it is.",
        "`/interlock team start` resumes the runs the stop held, then starts queued issues up to the team's "
        "`concurrency` (every queued issue for a team without a limit); a run a person stopped with `/interlock stop` "
        "stays stopped.",
        "Each held run's issue is told of the stop and of the start, once; a redelivered command changes nothing.",
        "Autopilot never lifts a stop: it passes the team's graph gates only (each pass is a comment naming the gate "
        "and the verdict), and the merge of the pull request, which makes the run `done`, stays a person's.",
        "`team stop [TEAM]`, `team start [TEAM]` (see **Stopping a team** in [Teams](../github/teams.md)), "
        "from people with write permission",
        "Starting a run costs 19 (two of them read whether its team is stopped, before and after the start;",
    ]:
        assert sentence in text, sentence
