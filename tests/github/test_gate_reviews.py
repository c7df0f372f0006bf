"""Gates bound to what was reviewed, on the GitHub stand-in with the real review payload (SPEC GH5, H5, H6)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from app.engine.record import Run, Status
from app.store.journal import record_path
from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, SMALL_GRAPH, World, example
from tests.helpers import ROOT, doc

CONFIG = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\n"
SEPARATED = CONFIG + "teams: {core: {gates: {separateDuties: true}}}\n"


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []  # every request matches GitHub's own REST description


def gate_on_pushed_work(world: World, config: str = CONFIG, graph: dict[str, Any] | None = None) -> tuple[int, str]:
    """A run started by alice whose first mission pushed a commit and stored its record with the branch's head,
    as the job's deliver phase does: the gate opens there. The issue and that head."""
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    if graph is not None:
        world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(graph))
    _, issue = world.label(user="alice")
    branch = f"interlock/issue-{issue}"
    world.fake.commit_file(REPO, branch, "app.py", "print('hello')\n")  # the agent's work, pushed
    head = world.fake.refs[(REPO, branch)]
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "built", "commits": 1, "git": {"head": head}}
    assert world.job_done(issue, 1, "build", "", record=json.dumps(record)) is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.GATE_WAIT and run.gate.head == head  # SPEC H5: the gate records the head
    return issue, head


def review(
    world: World,
    issue: int,
    commit: Any,
    user: str = "carol",
    state: str = "approved",
    delivery: str | None = None,
    **more: Any,
) -> Outcome:
    payload = example("pull_request_review", "submitted.payload.json")  # a real payload: commit_id and all
    payload["pull_request"]["head"] = {**payload["pull_request"]["head"], "ref": f"interlock/issue-{issue}"}
    payload["pull_request"]["number"] = int(world.run(issue).links["pr"])
    payload["review"] = {**payload["review"], "state": state, "body": "", "user": {"login": user}}
    payload["review"].update(commit_id=commit, submitted_at="2099-01-01T00:00:00Z", **more)
    if commit is None:
        del payload["review"]["commit_id"]
    return world.deliver("pull_request_review", payload, delivery=delivery)


def answers(world: World, run: Run) -> list[str]:
    """The comments on the run's pull request."""
    return [c["body"] for c in world.fake.comments.values() if c["issue"] == int(run.links["pr"])]


def test_an_approval_of_an_older_commit_changes_nothing_and_is_answered_once(world: World) -> None:
    # SPEC GH5, H5
    issue, head = gate_on_pushed_work(world)
    older = world.fake.commits[head]["parents"][0]
    before = world.run(issue)
    calls = len(world.fake.requests)
    assert review(world, issue, older) is Outcome.HANDLED
    sent = [(r.method, r.url.path.rsplit("/", 2)[-2:]) for r in world.fake.requests[calls:]]
    run = world.run(issue)
    assert run.version == before.version and run.status is Status.GATE_WAIT and len(world.fake.dispatches) == 1
    said = answers(world, run)
    assert len(said) == 1 and said[0].startswith("@carol this approval was for commit")
    assert f"`{older[:7]}`" in said[0] and f"`{head[:7]}`" in said[0] and "Nothing changed." in said[0]
    # reads (the permission, the journal), then only on this refused path: the comments listed, and one comment
    assert sent[-2:] == [("GET", [run.links["pr"], "comments"]), ("POST", [run.links["pr"], "comments"])]
    assert [s for s in sent[:-2] if s[0] != "GET" and s[1] != ["api", "graphql"]] == []  # nothing else written
    assert review(world, issue, older, delivery=f"delivery-{world.count}") is Outcome.HANDLED  # redelivered
    assert review(world, issue, older, delivery="another-replica") is Outcome.HANDLED  # the same review again
    assert len(answers(world, run)) == 1  # SPEC GH8: said once
    review(world, issue, older, id=777)  # another review of the old commit: answered too, once
    review(world, issue, older, id=777)
    assert len(answers(world, run)) == 2
    assert world.run(issue).version == before.version


@pytest.mark.parametrize("commit", [None, 12345], ids=["absent", "not-text"])
def test_a_review_naming_no_commit_is_read_leniently_and_changes_nothing(world: World, commit: Any) -> None:
    # SPEC GH5, H5, GH8: a field of the wrong kind fails no delivery
    issue, _ = gate_on_pushed_work(world)
    assert review(world, issue, commit, state="changes_requested") is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.GATE_WAIT
    assert "this request for changes was for no commit" in answers(world, run)[0]


def test_an_approval_of_the_gate_head_passes_and_the_journal_names_reviewer_and_commit(world: World) -> None:
    # SPEC GH5, H5, H6
    issue, head = gate_on_pushed_work(world)
    assert review(world, issue, head) is Outcome.HANDLED
    run = world.run(issue)
    assert run.stage == "review" and run.status is Status.RUNNING and len(world.fake.dispatches) == 2
    state = world.fake.commits[world.fake.refs[(REPO, "interlock/state")]]["tree"]
    stored = json.loads(world.fake.trees[state][record_path(run.id)])  # the journal, as stored on the state branch
    hop = stored["path"][-1]
    assert (hop["stage"], hop["by"], hop["commit"]) == ("build", "carol", head)
    assert answers(world, run) == []


def test_the_requesters_own_approval_is_refused_when_duties_are_separated(world: World) -> None:
    # SPEC H6: alice labelled the issue (she requested the run); she has write permission
    issue, head = gate_on_pushed_work(world, SEPARATED)
    assert world.run(issue).requested_by == "alice" and world.run(issue).separate_duties
    assert review(world, issue, head, user="alice") is Outcome.HANDLED
    run = world.run(issue)
    assert run.status is Status.GATE_WAIT
    assert answers(world, run) == [
        "@alice alice requested this run and duties are separated: another person with the permission must approve "
        f"its gates. Nothing changed.\n\n<!-- interlock:effect run={run.id} review-refused@{review_id()} -->"
    ]
    assert review(world, issue, head, user="carol") is Outcome.HANDLED
    assert world.run(issue).path[-1].by == "carol"


def test_a_team_separates_duties_too(world: World) -> None:
    # SPEC H6: per team
    config = CONFIG + "teams: {core: {gates: {separateDuties: true}}}\n"
    issue, head = gate_on_pushed_work(world, config)
    assert world.run(issue).separate_duties
    review(world, issue, head, user="alice")
    assert world.run(issue).status is Status.GATE_WAIT


def test_a_graph_separates_duties_too(world: World) -> None:
    # SPEC H6: per graph
    issue, head = gate_on_pushed_work(world, graph={**SMALL_GRAPH, "gates": {"separateDuties": True}})
    assert not world.run(issue).separate_duties
    review(world, issue, head, user="alice")
    assert world.run(issue).status is Status.GATE_WAIT and len(answers(world, world.run(issue))) == 1


def test_the_requesters_own_approval_counts_when_duties_are_not_separated(world: World) -> None:
    # SPEC H6: off unless asked for
    issue, head = gate_on_pushed_work(world)
    assert review(world, issue, head, user="alice") is Outcome.HANDLED
    run = world.run(issue)
    assert run.stage == "review" and run.path[-1].by == "alice"


def review_id() -> int:
    return int(example("pull_request_review", "submitted.payload.json")["review"]["id"])


@pytest.mark.parametrize(
    ("config", "separated"),
    [
        ("teams: {core: {gates: {separateDuties: true}}}\n", True),
        ("teams: {core: {gates: {separateDuties: false}}}\n", False),
        ("teams: {core: {}}\n", False),
        ("", False),
    ],
)
def test_a_team_separates_duties_only_when_it_says_so(config: str, separated: bool) -> None:
    # SPEC H6: a team's `gates:`; the top-level `gates:` stays a local run's ask | approve | stop
    from app.github.config import parse_config

    assert parse_config(config.encode()).team_settings()[0].separate_duties is separated


def test_the_requester_cannot_pass_the_gate_by_a_command_either(world: World) -> None:
    # SPEC H6, GH7: `/interlock route` and `deliver` at a gate pass it: refused to the requester, with why
    issue, _ = gate_on_pushed_work(world, SEPARATED)
    for command in ("/interlock route PASS", "/interlock deliver"):
        assert world.comment(issue, command, user="alice") is Outcome.HANDLED
        assert world.run(issue).status is Status.GATE_WAIT
    said = [c["body"] for c in world.fake.comments.values() if c["issue"] == issue]
    assert sum("alice requested this run and duties are separated" in body for body in said) == 2


def test_an_approval_that_counts_reads_no_comments(world: World) -> None:
    # SPEC GH5: the normal path costs no call more (tests/bench/bench_github.py keeps the figures)
    issue, head = gate_on_pushed_work(world)
    calls = len(world.fake.requests)
    review(world, issue, head)
    assert not [r for r in world.fake.requests[calls:] if r.url.path.endswith("/comments") and r.method == "GET"]


def test_the_readme_says_how_gates_bind_to_what_was_reviewed() -> None:
    # SPEC GH5, H5, H6: each sentence of the README's paragraph is behaviour the tests above check
    text = " ".join(doc("operating/service.md", "github/satellites.md").split())
    for words in (
        "A gate records the run branch's head when it opens: the commit the mission's job pushed, as its mission "
        "record says (`gate.head` in the run record).",
        "A review counts only when its `commit_id` is that commit.",
        "A review of another commit, or of none, changes nothing and is answered with one comment on the pull "
        "request that names both commits and says why; a redelivery of the same review posts no second comment.",
        'by `"gates": {"separateDuties": true}` in the graph or `gates: {separateDuties: true}` in '
        "a team of `.github/interlock.yml` (the top-level `gates:` is a local run's `ask`, `approve` or `stop`), "
        "the person who requested the run "
        "(who added the trigger label; locally, who started it) may not approve its gates, nor pass one with "
        "`/interlock route` or `deliver`",
        "An approval that counts is journaled with its reviewer and its commit (`path[].by` and `path[].commit` "
        "in the run record).",
        "A record older than these fields has a gate with no head: any review of it counts, as before.",
        "Refusing a review costs two calls (the pull request's comments read, one comment); an approval that "
        "counts costs none more than before.",
    ):
        assert words in text, words
    graph_schema = json.loads((ROOT / "graphs" / "graph.schema.json").read_text())
    assert "separateDuties" in graph_schema["$defs"]["GateRules"]["properties"]
    config_schema = (ROOT / "app" / "github" / "interlock.schema.json").read_text()
    assert config_schema.count('"separateDuties"') >= 1
