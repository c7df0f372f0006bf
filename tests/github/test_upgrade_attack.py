# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Attacks on ``/interlock resume --upgrade`` on the GitHub stand-in (SPEC J7, GH7, GH8): an issue without a
run, a stage the new version lacks, a redelivery after the run ended."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.engine.record import Status
from app.runner.verify import verify
from app.webhooks.shell import GitHubRuns
from tests.github.test_flows import REPO, SMALL_GRAPH, World, example, world  # noqa: F401 - the fixture
from tests.github.test_upgrade_command import GRAPH_FILE, content_hash, edited, replies, stopped_run


def test_an_upgrade_on_an_issue_without_a_run_is_answered(world: World) -> None:
    # SPEC GH7: a command on an issue (or pull request) no run belongs to is answered, never a server error
    world.comment(4242, "/interlock resume --upgrade")
    (reply,) = replies(world, 4242)
    assert "nothing changed" in reply and "issue-4242" in reply


def test_an_upgrade_at_a_stage_the_new_version_lacks_moves_nothing(world: World) -> None:
    # SPEC J7, GH7: "nothing changed" is true: the run stays on the version it was on
    issue = stopped_run(world)
    before = world.run(issue)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    world.comment(issue, "/interlock resume --upgrade at nowhere")
    run = world.run(issue)
    (reply,) = replies(world, issue)
    assert "nowhere" in reply and "nothing changed" in reply
    assert run.graph_hash == before.graph_hash != content_hash(edited(maxVisits=5))
    assert run.version == before.version and run.status is Status.INTERRUPTED


def test_a_redelivered_upgrade_after_the_run_ended_says_nothing(world: World) -> None:
    # SPEC GH8: a redelivery of a command already applied changes nothing and answers nothing
    issue = stopped_run(world)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    body = "/interlock resume --upgrade"
    payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    world.deliver("issue_comment", payload, delivery="upgrade-then-end")
    world.comment(issue, "/interlock abandon")
    ended = world.run(issue)
    assert ended.status is Status.CANCELLED
    world.deliver("issue_comment", payload, delivery="upgrade-then-end")
    assert world.run(issue).version == ended.version
    assert replies(world, issue) == []


def upgrade_payload(issue: int, body: str = "/interlock resume --upgrade") -> dict[str, Any]:
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {**payload["comment"], "body": body, "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return payload


def test_a_failed_resume_after_the_move_is_finished_by_the_redelivery(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC J7, GH8: the service dies between the move and the resume; GitHub redelivers; the run resumes once
    issue = stopped_run(world)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    real = GitHubRuns.apply
    calls: list[str] = []

    def dying(self: GitHubRuns, run_id: str, make: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(run_id)
        if len(calls) == 2:
            raise RuntimeError("killed between the move and the resume")
        return real(self, run_id, make, *args, **kwargs)

    monkeypatch.setattr(GitHubRuns, "apply", dying)
    with pytest.raises(RuntimeError):
        world.deliver("issue_comment", upgrade_payload(issue), delivery="dies-once")
    moved = world.run(issue)
    assert moved.graph_hash == content_hash(edited(maxVisits=5)) and moved.status is Status.INTERRUPTED
    dispatched = len(world.fake.dispatches)
    world.deliver("issue_comment", upgrade_payload(issue), delivery="dies-once")
    run = world.run(issue)
    assert run.status is Status.RUNNING and len(world.fake.dispatches) == dispatched + 1
    assert replies(world, issue) == []
    world.deliver("issue_comment", upgrade_payload(issue), delivery="dies-once")
    assert world.run(issue).version == run.version and len(world.fake.dispatches) == dispatched + 1


class StateBranch:
    """The state branch's files as ``verify`` reads them (``interlock verify --repo OWNER/NAME`` reads the same)."""

    def __init__(self, world: World) -> None:
        self.files = world.fake.logical_files(REPO, "interlock/state")  # by logical path, in either layout

    def read(self, path: str) -> bytes | None:
        text = self.files.get(path)
        return None if text is None else text.encode()

    def list_files(self, prefix: str) -> list[str]:
        return [path for path in self.files if path.startswith(prefix.rstrip("/") + "/")]


def test_a_run_upgraded_on_github_verifies(world: World) -> None:
    # SPEC J6, J7: the versions before the move replay on the graph kept by its hash, those after on the new one
    issue = stopped_run(world)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    world.comment(issue, "/interlock resume --upgrade")
    run = world.run(issue)
    world.job_done(issue, run.missions[-1].seq, "build", "built it\nVERDICT: PASS")
    checked = verify(StateBranch(world), run.id)
    assert checked.found is None, checked.found
    assert checked.checked == world.run(issue).version


def test_a_run_whose_record_keeps_conflicts_verifies(world: World) -> None:
    # SPEC J6, V9: the conflicts the job found are kept in the record by the engine, so the replay makes them too
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(SMALL_GRAPH))
    _, issue = world.label()
    found = {"head": "c0ffee" * 6 + "0000", "ahead": 2, "files_changed": ["app.py"], "conflicts": ["app.py"]}
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "built", "commits": 1, "git": found}
    world.job_done(issue, 1, "build", "", record=json.dumps(record))
    run = world.run(issue)
    assert run.conflicts == ["app.py"] and run.conflict_count == 1
    world.comment(issue, "/interlock stop")
    world.comment(issue, "/interlock route PASS")
    checked = verify(StateBranch(world), run.id)
    assert checked.found is None, checked.found
    assert checked.checked == world.run(issue).version


def test_a_graph_whose_name_is_not_its_file_name_upgrades(world: World) -> None:
    # SPEC J7, G6: the run was started from `small.json` whose graph calls itself `tiny`; its current version is
    # found where the start found it, not under the name the graph gives itself
    tiny = {**SMALL_GRAPH, "name": "tiny"}
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(tiny))
    _, issue = world.label()
    world.comment(issue, "/interlock stop")
    world.job_done(issue, 1, "build", "built it")
    before = world.run(issue)
    assert before.status is Status.INTERRUPTED and before.graph == "tiny"
    newer = {**edited(maxVisits=5), "name": "tiny"}
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(newer))
    world.comment(issue, "/interlock resume --upgrade")
    assert replies(world, issue) == []
    assert world.run(issue).graph_hash == content_hash(newer)


def test_an_upgrade_while_the_team_is_stopped_moves_nothing(world: World) -> None:
    # SPEC J7, H4: a stopped team refuses the resume, so the move before it is refused too
    issue = stopped_run(world)
    before = world.run(issue)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    world.comment(issue, "/interlock team stop")
    world.comment(issue, "/interlock resume --upgrade")
    run = world.run(issue)
    assert run.graph_hash == before.graph_hash and run.status is Status.INTERRUPTED
    assert any("nothing changed" in reply for reply in replies(world, issue))


def test_a_reader_cannot_upgrade(world: World) -> None:
    # SPEC GH7: only people with the configured permission steer runs
    issue = stopped_run(world)
    before = world.run(issue)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    world.fake.permissions[(REPO, "mallory")] = "read"
    world.comment(issue, "/interlock resume --upgrade", user="mallory")
    assert world.run(issue).graph_hash == before.graph_hash
    (reply,) = replies(world, issue)
    assert reply.startswith("@mallory only people with")


def test_a_redelivery_after_the_move_resumes_whatever_main_holds_now(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC J7, GH8: the move was saved, the resume was not; main's graph was broken since: the redelivery owes
    # only the resume, on the version the run moved to, and does not read main's graph again
    issue = stopped_run(world)
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps(edited(maxVisits=5)))
    real = GitHubRuns.apply
    calls: list[str] = []

    def dying(self: GitHubRuns, run_id: str, make: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(run_id)
        if len(calls) == 2:
            raise RuntimeError("killed between the move and the resume")
        return real(self, run_id, make, *args, **kwargs)

    monkeypatch.setattr(GitHubRuns, "apply", dying)
    with pytest.raises(RuntimeError):
        world.deliver("issue_comment", upgrade_payload(issue), delivery="dies-then-broken")
    world.fake.commit_file(REPO, "main", GRAPH_FILE, json.dumps({**SMALL_GRAPH, "entry": "nowhere"}))
    world.deliver("issue_comment", upgrade_payload(issue), delivery="dies-then-broken")
    run = world.run(issue)
    assert run.graph_hash == content_hash(edited(maxVisits=5)) and run.status is Status.RUNNING
    assert replies(world, issue) == []
