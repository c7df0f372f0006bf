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

from app.github.client import GitHubApp, GitHubError, RefConflict
from app.github.commits import CommitRefused, commit_by_git_data, commit_on_branch
from app.store.github import GitHubStore
from app.webhooks.settings import ServiceSettings
from tests.github.fake_github import FakeGitHub
from tests.helpers import doc

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


TOO_BIG = ("UNPROCESSABLE", "The request body is too large")  # the shape of a refusal GitHub gives in GraphQL


def test_a_save_the_mutation_refuses_goes_by_the_git_data_api(settings: ServiceSettings) -> None:
    # SPEC J2: a refusal that is not a moved branch (a size limit) would fail every redelivery the same way: the
    # save is made the older way instead, on the same head, and the branch fast-forwarded to it
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"queue.json": "[]"})
    fake.commit_refusals.append(TOO_BIG)
    store = GitHubStore(app_for(fake, settings).installation(1), REPO)
    stored = store.write_json_cas("queue.json", lambda value: [*value, "a"], "add a")
    assert stored == ["a"] and json.loads(fake.files_at(REPO, BRANCH)["queue.json"]) == ["a"]
    made = fake.refs[(REPO, BRANCH)]
    assert fake.commits[made]["parents"] == [head]
    assert fake.calls()[-6:] == [
        "POST /api/graphql",  # refused
        f"POST /repos/{REPO}/git/blobs",  # the file in a request of its own
        f"GET /repos/{REPO}/git/commits/{head}",
        f"POST /repos/{REPO}/git/trees",
        f"POST /repos/{REPO}/git/commits",
        f"PATCH /repos/{REPO}/git/refs/heads/{BRANCH}",
    ]
    assert fake.problems == []  # each request as GitHub's OpenAPI description has it


def test_the_older_way_sends_each_file_as_a_blob_not_inline_in_the_tree(settings: ServiceSettings) -> None:
    # what the mutation refused for its size, a tree request carrying the same contents inline would be refused
    # too ("Sorry, your request timed out. It's likely that your input was too large to process", 422): each file
    # goes in a blob request of its own (up to 100 MB), the tree names the blobs by sha
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"keep.json": "1"})
    api = app_for(fake, settings).installation(1)
    files = {"runs/r.json": b'{"a": 1}\n', "board/index.json": ("x" * 1000).encode()}
    commit_by_git_data(api, REPO, BRANCH, head, "big", files)
    (tree,) = [json.loads(r.content) for r in fake.requests if r.url.path.endswith("/git/trees")]
    assert all("content" not in entry and len(entry["sha"]) == 40 for entry in tree["tree"])
    assert fake.calls().count(f"POST /repos/{REPO}/git/blobs") == 2 and fake.problems == []
    assert fake.files_at(REPO, BRANCH) == {
        "keep.json": "1",
        "runs/r.json": '{"a": 1}\n',
        "board/index.json": "x" * 1000,
    }


def test_the_older_way_takes_bytes_that_are_not_utf8(settings: ServiceSettings) -> None:
    # the mutation carries any bytes (base64); its fallback must too, not fail on decoding them for ever
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"keep.json": "1"})
    api = app_for(fake, settings).installation(1)
    commit_by_git_data(api, REPO, BRANCH, head, "binary", {"blob.bin": b"\xff\x00\xfe"})
    assert fake.files_at(REPO, BRANCH)["blob.bin"].encode("utf-8", "surrogateescape") == b"\xff\x00\xfe"


def test_a_mutation_refused_with_http_413_goes_the_older_way(settings: ServiceSettings) -> None:
    # SPEC J2: GitHub's front end refuses a request body over its size limit with 413 before GraphQL reads it
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"queue.json": "[]"})
    fake.fail("POST", "/graphql", 413)
    store = GitHubStore(app_for(fake, settings).installation(1), REPO)
    assert store.write_json_cas("queue.json", lambda value: [*value, "a"], "add a") == ["a"]
    assert fake.calls().count("POST /api/graphql") == 1 and f"POST /repos/{REPO}/git/blobs" in fake.calls()
    assert fake.commits[fake.refs[(REPO, BRANCH)]]["parents"] == [head]
    assert json.loads(fake.files_at(REPO, BRANCH)["queue.json"]) == ["a"]


def test_the_older_way_still_refuses_a_branch_that_moved(settings: ServiceSettings) -> None:
    # SPEC J2: the fallback's fast-forward is refused when another writer moved the branch: a conflict, not a loss
    fake = FakeGitHub()
    stale = fake.seed_branch(REPO, BRANCH, {"a.json": "1"})
    fake.commit_file(REPO, BRANCH, "a.json", "2")
    moved = fake.refs[(REPO, BRANCH)]
    fake.commit_refusals.append(TOO_BIG)
    store = GitHubStore(app_for(fake, settings).installation(1), REPO)
    with pytest.raises(RefConflict):
        store._commit(stale, {"a.json": b"3"}, "late")
    assert fake.refs[(REPO, BRANCH)] == moved and fake.files_at(REPO, BRANCH) == {"a.json": "2"}


@pytest.mark.parametrize("kind", ["NOT_FOUND", "FORBIDDEN"])
def test_a_missing_branch_or_permission_is_not_tried_the_older_way(settings: ServiceSettings, kind: str) -> None:
    # the git data API would be refused the same way: the delivery fails at once, nothing else is sent
    fake = FakeGitHub()
    head = fake.seed_branch(REPO, BRANCH, {"a.json": "1"})
    fake.commit_refusals.append((kind, "refused"))
    api = app_for(fake, settings).installation(1)
    before = len(fake.calls())
    with pytest.raises(GitHubError) as raised:
        commit_on_branch(api, REPO, BRANCH, head, "x", {"a.json": b"2"})
    assert not isinstance(raised.value, CommitRefused | RefConflict)
    assert len(fake.calls()) - before == 1 and fake.refs[(REPO, BRANCH)] == head


def test_the_readme_says_when_a_save_goes_the_older_way() -> None:
    text = " ".join(doc("operating/service.md").split())
    assert (
        "A save that `createCommitOnBranch` refuses for a reason other than a moved branch, a missing branch or a "
        "missing permission (a request over GitHub's size limits, say) is made the older way instead: a blob for each "
        "file, a tree, a commit and a fast-forward of the branch, which a branch moved meanwhile still refuses"
    ) in text
