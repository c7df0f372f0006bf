"""Issue 11: nothing a person types on GitHub reaches what the App stores, posts or dispatches, secrets masked.

People paste a secret of every shape the redactor knows (tests/secret_shapes.py) into every kind of text the
App takes from them — the issue's title and body (the request), a review's body and its inline comments
(amendment and approval notes), ``/interlock answer`` and ``/interlock route`` comments — and none may be
found in anything the App sent to the stand-in GitHub: every version of every file of every branch (run
records, decision files, the orders whose prompts the next missions receive), commit messages, comments,
pull requests, issues filed, workflow dispatches. The text is masked where it enters (SPEC GH9).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from app.engine.record import Status
from app.redact import MASK
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, example
from tests.secret_shapes import ONE_OF_EACH, core


def strings(value: Any) -> Iterator[str]:
    """Every string inside the stand-in's state, unescaped (a key's lines must be found as they are)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from strings(item)


def sent(world: World) -> dict[str, str]:
    fake = world.fake
    return {
        "files and commits": "\n".join(strings([fake.trees, fake.commits])),
        "comments": "\n".join(strings(fake.comments)),
        "pulls, issues, dispatches": "\n".join(strings([fake.pulls, fake.issues, fake.dispatches])),
    }


def label_with(world: World, title: str, body: str) -> int:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "title": title, "body": body, "labels": [{"name": "feature-request"}]}
    world.deliver("issues", payload)
    number: int = payload["issue"]["number"]
    return number


def order_prompt(world: World, issue: int, seq: int, stage: str) -> str:
    files = world.fake.logical_files(REPO, "interlock/state")
    prompt: str = json.loads(files[f"runs/issue-{issue}/orders/{seq:04d}-{stage}.json"])["prompt"]
    return prompt


@seed(11)
@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(secrets=ONE_OF_EACH, separator=st.sampled_from([" ", "\n", "'", '"', "=", ""]))
def test_no_secret_a_person_types_on_github_is_stored_posted_or_dispatched(
    settings: ServiceSettings, secrets: dict[str, str], separator: str
) -> None:
    # SPEC GH9 (issue 11): the request, review notes, answers and routes, each with every secret shape
    leak = separator.join(secrets.values())
    one_line = " ".join(secrets.values()).replace("\n", " ")  # an issue title has no line break
    world = World(settings)
    issue = label_with(world, f"Rotate {one_line}", f"The old ones were {leak}")
    review = example("pull_request_review", "submitted.payload.json")["review"]["id"]
    world.fake.review_notes[review] = [{"body": f"inline: {leak}"}]
    world.job_done(issue, 1, "build", "built it")
    assert world.run(issue).status is Status.GATE_WAIT
    world.review(issue, "changes_requested", body=f"use {leak} instead")
    world.job_done(issue, 2, "build", "built it again")
    world.review(issue, "approved", body=f"and keep {leak}")
    world.job_done(issue, 3, "review", "Which key?\nVERDICT: NEEDS_INPUT")
    world.comment(issue, f"/interlock answer the second: {leak}")
    world.job_done(issue, 4, "review", "I cannot tell", store_record=False)  # the job failed: a person routes
    world.comment(issue, f"/interlock route {leak}")  # not a label: refused, and the reply shows no secret
    assert any("nothing changed" in comment["body"] for comment in world.fake.comments.values())
    found = {
        name: [where for where, text in sent(world).items() if core(secret) in text] for name, secret in secrets.items()
    }
    assert not {name: where for name, where in found.items() if where}
    assert world.fake.problems == []
    # every path was taken, each with the secrets masked: the request and the notes and the answer in the
    # prompts that follow them
    assert f"Rotate {MASK}" in order_prompt(world, issue, 1, "build")
    assert f"use {MASK}" in order_prompt(world, issue, 2, "build") and f"inline: {MASK}" in order_prompt(
        world, issue, 2, "build"
    )
    assert f"and keep {MASK}" in order_prompt(world, issue, 3, "review")
    assert f"the second: {MASK}" in order_prompt(world, issue, 4, "review")


@pytest.fixture(autouse=True)
def clear_config_cache() -> None:
    from app.webhooks import shell

    shell.CONFIG_CACHE.clear()
