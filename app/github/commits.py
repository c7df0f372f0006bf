"""A commit on a branch in one call: GraphQL's ``createCommitOnBranch`` with ``expectedHeadOid``.

Why: the git data API needs three content-creating requests to commit (a tree, a commit, a fast-forward of the
ref), and GitHub allows an App only 80 of those a minute and 500 an hour. The mutation is one request, and a true
compare-and-swap: GitHub moves the branch only if it still points at ``expectedHeadOid``; otherwise it answers
200 with ``data.createCommitOnBranch: null`` and an error of type ``STALE_DATA`` ("Expected branch to point to
"<oid>" but it did not.  Pull and try again."), which is raised here as ``RefConflict`` so the store re-reads and
re-applies (SPEC J2).

Its limits, as GitHub documents them: the branch must exist already (the store makes the state branch once, with
the git data API); contents are base64 in the request, so a request grows by a third over the files it carries
(GitHub refuses requests over its size limits, and files over 100 MB as for any push); the commit's author and
committer are the App's bot and GitHub signs it (it shows as Verified) — the author cannot be chosen.
https://docs.github.com/en/graphql/reference/mutations#createcommitonbranch
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping

from githubkit.exception import GraphQLFailed, RequestFailed

from app.github.client import GitHubError, Installation, RefConflict

MUTATION = (
    "mutation InterlockCommit($input: CreateCommitOnBranchInput!) { "
    "createCommitOnBranch(input: $input) { commit { oid } } }"
)
STALE = "STALE_DATA"
WHERE = "/graphql createCommitOnBranch"  # how an error names the request
NO_FALLBACK = frozenset({STALE, "NOT_FOUND", "FORBIDDEN"})  # the git data API would be refused the same way
TOO_LARGE = 413


class CommitRefused(GitHubError):
    """GitHub refused the mutation for a reason other than a moved branch, a missing branch or a missing
    permission (a request over its size limits, say): the git data API may still take the commit, whose files
    travel as blobs of up to 100 MB, one a request, instead of base64 in one request (``commit_by_git_data``)."""


def commit_on_branch(
    api: Installation,
    repo: str,
    branch: str,
    expected_head: str,
    message: str,
    additions: Mapping[str, bytes],
    deletions: Iterable[str] = (),
) -> str:
    """The new commit's id; ``RefConflict`` when the branch no longer points at ``expected_head``. The mutation's
    ``CreateCommitOnBranchInput`` names the branch by ``repositoryNameWithOwner`` and ``branchName``."""
    given = {
        "branch": {"repositoryNameWithOwner": repo, "branchName": branch},
        "expectedHeadOid": expected_head,
        "message": commit_message(message),
        "fileChanges": file_changes(additions, deletions),
    }
    try:
        data = api.github.graphql(MUTATION, {"input": given})
    except GraphQLFailed as exc:
        errors = exc.response.errors or []
        text = "; ".join(error.message for error in errors)[:300]
        kinds = {error.type for error in errors}
        error = RefConflict if STALE in kinds else GitHubError if kinds & NO_FALLBACK else CommitRefused
        raise error("POST", WHERE, 200, text) from None
    except RequestFailed as exc:  # a 5xx its retries did not cure, a 403: the delivery fails, its redelivery retries
        status = exc.response.status_code
        error = CommitRefused if status == TOO_LARGE else GitHubError
        raise error("POST", WHERE, status, exc.response.text[:300]) from None
    commit = ((data or {}).get("createCommitOnBranch") or {}).get("commit") or {}
    if not commit.get("oid"):
        raise GitHubError("POST", WHERE, 200, "no commit in the answer")
    return str(commit["oid"])


def commit_message(message: str) -> dict[str, str]:
    """A commit message as GitHub's ``CommitMessage``: its first line the headline, the rest the body."""
    headline, _, body = message.partition("\n")
    return {"headline": headline or "interlock", **({"body": body.strip()} if body.strip() else {})}


def file_changes(additions: Mapping[str, bytes], deletions: Iterable[str] = ()) -> dict[str, object]:
    """GitHub's ``FileChanges``: each added file's contents in base64, and the paths deleted, if any."""
    changes: dict[str, object] = {
        "additions": [
            {"path": path, "contents": base64.b64encode(data).decode("ascii")} for path, data in additions.items()
        ]
    }
    gone = [{"path": path} for path in deletions]
    if gone:
        changes["deletions"] = gone
    return changes


def commit_by_git_data(
    api: Installation, repo: str, branch: str, expected_head: str, message: str, additions: Mapping[str, bytes]
) -> str:
    """The same commit made the older way, for what the mutation refused: each file a blob of its own (base64, so
    any bytes), a tree of them on the head's, a commit whose parent is ``expected_head``, and a fast-forward of the
    branch to it. Not the contents inline in the tree: a tree request as large as the refused mutation is refused
    too ("your input was too large to process", 422). A branch that moved meanwhile is no longer an ancestor of
    the commit: the fast-forward fails with ``RefConflict``, as the mutation would have. Four requests and one a
    file, all but one content-creating, so only where the mutation cannot do.
    https://docs.github.com/en/rest/git/blobs#create-a-blob"""
    entries = [
        {"path": path, "mode": "100644", "type": "blob", "sha": _blob(api, repo, data)}
        for path, data in additions.items()
    ]
    tree = api.tree(repo, entries, api.commit_tree(repo, expected_head))
    commit = api.commit(repo, message, tree, [expected_head])
    api.update_ref(repo, branch, commit)
    return commit


def _blob(api: Installation, repo: str, data: bytes) -> str:
    body = {"content": base64.b64encode(data).decode("ascii"), "encoding": "base64"}
    return str(api.call("POST", f"/repos/{repo}/git/blobs", json=body)["sha"])
