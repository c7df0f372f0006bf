"""The calls on pull requests: made once, edited, read, their reviewers asked and their reviews read, and
taken out of draft (GraphQL: REST cannot).
https://docs.github.com/en/rest/pulls/pulls
"""

from __future__ import annotations

from typing import Any

from app.github.calls import GitHubError, RestCalls
from app.github.lost_answer import made_once


class PullRequestCalls(RestCalls):
    """What an installation does with pull requests; ``Installation`` (``app/github/client.py``) has them."""

    def create_pull(self, repo: str, head: str, base: str, title: str, body: str, draft: bool) -> dict[str, Any]:
        """The branch's pull request, made once: when an earlier attempt's answer was lost, GitHub refuses a second
        one (422) and the open one is found instead; a 422 with none open (no commits) is raised."""
        fields = {"head": head, "base": base, "title": title, "body": body, "draft": draft}

        def make() -> dict[str, Any]:
            data = self.call("POST", f"/repos/{repo}/pulls", json=fields)
            return {"number": int(data["number"]), "node_id": str(data.get("node_id", ""))}

        return made_once(make, lambda: self.open_pull(repo, head), refused=_second_pull_refused)

    def edit_pull(self, repo: str, number: int, body: str) -> None:
        """A pull request's body rewritten: the links between the pull requests of a run (SPEC U7)."""
        self.call("PATCH", f"/repos/{repo}/pulls/{number}", json={"body": body})

    def request_reviewers(self, repo: str, number: int, reviewers: list[str]) -> None:
        if reviewers:
            self.call("POST", f"/repos/{repo}/pulls/{number}/requested_reviewers", json={"reviewers": reviewers})

    def pull(self, repo: str, number: int) -> dict[str, Any] | None:
        """A pull request's number, node id, state and whether it is a draft; ``None`` when there is none."""
        data = self.call("GET", f"/repos/{repo}/pulls/{number}", missing_ok=True)
        return _pull_fields(data) if isinstance(data, dict) else None

    def open_pull(self, repo: str, branch: str) -> dict[str, Any] | None:
        """The open pull request from ``branch`` of ``repo`` itself, if there is one."""
        owner = repo.split("/", 1)[0]
        data = self.call("GET", f"/repos/{repo}/pulls", params={"head": f"{owner}:{branch}", "state": "open"})
        found = [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
        return _pull_fields(found[0]) if found else None

    def reviewers_asked(self, repo: str, number: int) -> set[str]:
        """Who was asked to review a pull request: those still requested, and those who reviewed already."""
        requested = self.call("GET", f"/repos/{repo}/pulls/{number}/requested_reviewers")
        reviews = self.call("GET", f"/repos/{repo}/pulls/{number}/reviews", params={"per_page": 100})
        users = (requested.get("users", []) if isinstance(requested, dict) else []) + [
            review.get("user") or {} for review in (reviews if isinstance(reviews, list) else [])
        ]
        return {str(user.get("login")) for user in users if isinstance(user, dict) and user.get("login")}

    def review_comments(self, repo: str, number: int, review_id: int) -> list[str]:
        """The inline comments of a review, as ``path:line: body`` lines (they are amendments too, SPEC GH5)."""
        data = self.call("GET", f"/repos/{repo}/pulls/{number}/reviews/{review_id}/comments", missing_ok=True)
        lines = []
        for comment in data if isinstance(data, list) else []:
            where = f"{comment.get('path', '?')}:{comment.get('line') or comment.get('original_line') or '?'}"
            lines.append(f"- {where}: {str(comment.get('body', '')).strip()}")
        return lines

    def mark_ready(self, node_id: str) -> None:
        """REST cannot undraft a pull request; GraphQL's ``markPullRequestReadyForReview`` can.
        https://docs.github.com/en/graphql/reference/mutations#markpullrequestreadyforreview"""
        query = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { clientMutationId } }"
        self.github.graphql(query, {"id": node_id})


def _second_pull_refused(exc: Exception) -> bool:
    """GitHub's 422 to a second pull request from a branch: an earlier attempt made the first one."""
    return isinstance(exc, GitHubError) and exc.status == 422


def _pull_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": int(data["number"]),
        "node_id": str(data.get("node_id", "")),
        "draft": data.get("draft") is True,
        "state": str(data.get("state", "open")),
    }
