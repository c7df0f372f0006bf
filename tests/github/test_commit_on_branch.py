"""The state branch written with GraphQL's ``createCommitOnBranch``: one call, a true compare-and-swap (SPEC J2, GH4).

There is no GraphQL schema in the corpus: the request is checked for the mutation's name and the input fields
GitHub documents (https://docs.github.com/en/graphql/reference/mutations#createcommitonbranch).
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from app.github.client import GitHubApp, RefConflict
from app.github.commits import commit_on_branch
from app.store.github import GitHubStore
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub

REPO = "octo/app"
BRANCH = "interlock/state"


def app_for(fake: FakeGitHub, settings: ServiceSettings) -> GitHubApp:
    return GitHubApp(replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=fake.transport())


def last_graphql(fake: FakeGitHub) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(fake.requests[-1].content)
    return body


def test_the_request_names_the_mutation_and_the_documented_input_fields(settings: ServiceSettings) -> None:
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"old.json": "{}"})
    api = app_for(fake, settings).installation(42)
    made = commit_on_branch(api, REPO, BRANCH, head, "interlock: a save\n\nwhy it was made", {"runs/r.json": b"{}\n"})
    sent = last_graphql(fake)
    assert "mutation" in sent["query"] and "createCommitOnBranch(input: $input)" in sent["query"]
    assert "CreateCommitOnBranchInput!" in sent["query"] and "commit { oid }" in sent["query"]
    given = sent["variables"]["input"]
    assert given["branch"] == {"repositoryNameWithOwner": REPO, "branchName": BRANCH}
    assert given["expectedHeadOid"] == head
    assert given["message"] == {"headline": "interlock: a save", "body": "why it was made"}
    assert given["fileChanges"] == {
        "additions": [{"path": "runs/r.json", "contents": base64.b64encode(b"{}\n").decode()}]
    }
    assert fake.refs[(REPO, BRANCH)] == made and fake.commits[made]["parents"] == [head]
    assert fake.files_at(REPO, BRANCH) == {"old.json": "{}", "runs/r.json": "{}\n"}


def test_deletions_go_in_file_changes(settings: ServiceSettings) -> None:
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"a.json": "1", "b.json": "2"})
    api = app_for(fake, settings).installation(42)
    commit_on_branch(api, REPO, BRANCH, head, "drop b", {"a.json": b"3"}, deletions=["b.json"])
    assert last_graphql(fake)["variables"]["input"]["fileChanges"]["deletions"] == [{"path": "b.json"}]
    assert fake.files_at(REPO, BRANCH) == {"a.json": "3"}


def test_a_stale_expected_head_is_refused_as_github_does_and_raises_a_conflict(settings: ServiceSettings) -> None:
    # SPEC J2: GitHub answers 200 with STALE_DATA "Expected branch to point to ..."; the branch does not move
    fake = FakeGitHub()
    stale = fake.seed_branch(REPO, BRANCH, {"a.json": "1"})
    fake.commit_file(REPO, BRANCH, "a.json", "2")  # another writer moved the branch
    moved = fake.refs[(REPO, BRANCH)]
    api = app_for(fake, settings).installation(42)
    with pytest.raises(RefConflict, match=f'Expected branch to point to "{stale}" but it did not'):
        commit_on_branch(api, REPO, BRANCH, stale, "late", {"a.json": b"3"})
    assert fake.refs[(REPO, BRANCH)] == moved and fake.files_at(REPO, BRANCH) == {"a.json": "2"}


def test_two_writers_one_loses_the_swap_and_reapplies_on_what_the_winner_stored(settings: ServiceSettings) -> None:
    # SPEC J2: both read the same head; the second to commit is refused, re-reads and applies its change again
    fake = FakeGitHub()
    fake.seed_branch(REPO, BRANCH, {"queue.json": "[]"})
    app = app_for(fake, settings)
    first, second = GitHubStore(app.installation(1), REPO), GitHubStore(app.installation(2), REPO)
    seen: list[Any] = []

    def add_one(value: Any) -> Any:
        seen.append(list(value))
        if len(seen) == 1:  # between first's read and its write, the other writer stores its change
            second.write_json_cas("queue.json", lambda other: [*other, "two"], "second")
        return [*value, "one"]

    stored = first.write_json_cas("queue.json", add_one, "first")
    assert seen == [[], ["two"]]  # the loser was called again on what the winner stored
    assert stored == ["two", "one"] and json.loads(fake.files_at(REPO, BRANCH)["queue.json"]) == ["two", "one"]
    stale = [json.loads(r.content) for r in fake.requests if r.url.path.endswith("/graphql")]
    assert sum("createCommitOnBranch" in body["query"] for body in stale) == 3  # the loser's refused try included
