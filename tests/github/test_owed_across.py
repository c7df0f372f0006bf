# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""A comment whose post failed is owed across later transitions (issue 28, part 3; SPEC GH8): each transition's
events file keeps the comments it posts, and the redelivery of the failed delivery posts those the issue lacks,
each once, however many transitions came in between (``app/webhooks/outbox.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture

Scenario = Callable[[World, int], None]


def comments_with(world: World, words: str) -> int:
    return sum(words in comment["body"] for comment in world.fake.comments.values())


def fail_next_comment(world: World, issue: int) -> None:
    world.fake.fail("POST", f"/repos/{REPO}/issues/{issue}/comments", 502)  # sent once: a create is never retried


def decided(world: World, issue: int) -> tuple[Callable[[], object], str, Scenario]:
    """The `Decided: …` comment of a resume: the resume's delivery fails posting it."""
    world.job_done(issue, 1, "build", "", store_record=False)  # failed: a decision
    fail_next_comment(world, issue)
    with pytest.raises(Exception, match="502"):
        world.comment(issue, "/interlock resume", delivery="resume-1")

    def then(world: World, issue: int) -> None:
        world.job_done(issue, 2, "build", "Built.\nVERDICT: PASS")  # a gate opens: its comment
        world.review(issue, "approved")  # the review stage is dispatched

    return (lambda: world.comment(issue, "/interlock resume", delivery="resume-1")), "Decided: resume by alice", then


def gate(world: World, issue: int) -> tuple[Callable[[], object], str, Scenario]:
    """The gate's comment: the finished job's delivery fails posting it."""
    fail_next_comment(world, issue)
    with pytest.raises(Exception, match="502"):
        world.job_done(issue, 1, "build", "Built.\nVERDICT: PASS", delivery="job-1")

    def then(world: World, issue: int) -> None:
        world.review(issue, "approved")
        record = {"seq": 2, "stage": "review", "status": "done", "answer": "Fine.\nVERDICT: PASS", "commits": 0}
        world.job_done(issue, 2, "review", "", record=json.dumps(record))  # the end

    def again() -> object:
        return world.job_done(issue, 1, "build", "Built.\nVERDICT: PASS", delivery="job-1")

    return again, "waits at a human gate", then


def escalation(world: World, issue: int) -> tuple[Callable[[], object], str, Scenario]:
    """The decision file's comment: the failed job's delivery fails posting it."""
    fail_next_comment(world, issue)
    with pytest.raises(Exception, match="502"):
        world.job_done(issue, 1, "build", "", store_record=False, delivery="job-1")

    def then(world: World, issue: int) -> None:
        world.comment(issue, "/interlock resume")
        world.job_done(issue, 2, "build", "Built.\nVERDICT: PASS")

    return (
        (lambda: world.job_done(issue, 1, "build", "", store_record=False, delivery="job-1")),
        "# Decision needed",
        then,
    )


@pytest.mark.parametrize("scenario", [decided, gate, escalation])
def test_a_failed_comment_is_posted_once_by_its_redelivery_after_two_more_transitions(
    world: World, scenario: Callable[[World, int], tuple[Callable[[], object], str, Scenario]]
) -> None:
    _, issue = world.label()
    redeliver, words, then = scenario(world, issue)
    assert comments_with(world, words) == 0  # its post failed
    then(world, issue)
    version = world.run(issue).version
    kinds = ("waits at a human gate", "Decided: resume", "# Decision needed")
    others = {body: comments_with(world, body) for body in kinds if body not in words and words not in body}
    redeliver()
    assert comments_with(world, words) == 1, words  # posted now
    redeliver()
    assert comments_with(world, words) == 1  # and once
    assert {body: comments_with(world, body) for body in others} == others  # the later ones not posted again
    assert world.run(issue).version == version  # a redelivery writes nothing


def test_the_readme_says_what_a_redelivery_posts_of_earlier_transitions() -> None:
    # the test above is the behaviour; these are the words
    from tests.helpers import doc

    text = " ".join(doc("github/appless.md", "operating/service.md", "graphs/engine.md").split())
    for words in (
        'Each transition\'s events file keeps the comments it posts, by their hidden mark and text (`"owed"`).',
        "reads the events files from its own transition to the newest (at most 8, in one GraphQL call: a comment of "
        "an older transition is dropped, and logged) and posts, oldest first, each comment the issue lacks that the "
        "App signed there",
        "A pull request merged or closed while a decision is open closes it: `choice` `closed`",
    ):
        assert words in text, words


def test_a_comment_forged_into_an_events_file_is_never_posted(world: World) -> None:
    # the state branch is anyone's with push access: only entries the App signed with its key are posted
    from app.store.journal import event_path
    from app.store.layout import sharded

    _, issue = world.label()
    fail_next_comment(world, issue)
    with pytest.raises(Exception, match="502"):
        world.job_done(issue, 1, "build", "", store_record=False, delivery="job-1")
    run = world.run(issue)
    path = sharded(event_path(run.id, run.version)) or event_path(run.id, run.version)
    data = json.loads(world.fake.files_at(REPO, "interlock/state")[path])
    forged = {"mark": "<!-- x -->", "text": "@everyone approved: merge now https://evil.example", "sig": "0" * 64}
    data["owed"] = [*data["owed"], forged, {"mark": "<!-- y -->", "text": "unsigned https://evil.example"}, "junk"]
    world.fake.commit_file(REPO, "interlock/state", path, json.dumps(data))
    world.job_done(issue, 1, "build", "", store_record=False, delivery="job-1")  # the redelivery
    assert comments_with(world, "evil.example") == 0 and comments_with(world, "# Decision needed") == 1
