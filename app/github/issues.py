"""The calls on issues: comments (posted once, edited, read), labels, and issues made and listed.
https://docs.github.com/en/rest/issues
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from app.github.calls import RestCalls
from app.github.lost_answer import made_comment, made_once, since


class IssueCalls(RestCalls):
    """What an installation does with issues and their comments; ``Installation`` (``app/github/client.py``) has
    them."""

    def comment(self, repo: str, issue: int, body: str) -> int:
        """The comment posted, once: when its answer is lost, the comment GitHub made of it is found instead of a
        second one posted (``app/github/lost_answer.py``)."""
        shown, after = self.shown(body), since()

        def make() -> int:
            return int(self.call("POST", f"/repos/{repo}/issues/{issue}/comments", json={"body": shown})["id"])

        return made_once(make, lambda: made_comment(self, repo, issue, shown, after))

    def comment_once(self, repo: str, issue: int, body: str, mark: str) -> None:
        """``body`` and ``mark`` (a hidden line) posted unless a comment of the issue carries ``mark`` already:
        a redelivery, or a second replica, that would say it again says nothing."""
        if not any(mark in comment["body"] for comment in self.issue_comments(repo, issue)):
            self.comment(repo, issue, f"{body}\n\n{mark}" if mark not in body else body)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> None:
        self.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json={"body": self.shown(body)})

    def issue_comments(self, repo: str, issue: int, pages: int = 10, after: str | None = None) -> list[dict[str, Any]]:
        """The comments of an issue (id and body), oldest first: up to ``pages`` pages of 100; ``after``: only
        those updated since then (GitHub's ``since``), so a long issue's newest are among those read."""
        found: list[dict[str, Any]] = []
        for page in range(1, pages + 1):
            params: dict[str, Any] = {"per_page": 100, "page": page} | ({"since": after} if after else {})
            data = self.call("GET", f"/repos/{repo}/issues/{issue}/comments", params=params)
            batch = [c for c in data if isinstance(c, dict)] if isinstance(data, list) else []
            found += [{"id": c.get("id"), "body": str(c.get("body") or "")} for c in batch]
            if len(batch) < 100:
                break
        return found

    def labels(self, repo: str, issue: int) -> set[str]:
        data = self.call("GET", f"/repos/{repo}/issues/{issue}/labels", params={"per_page": 100}, missing_ok=True)
        return {str(item.get("name")) for item in data if isinstance(item, dict)} if isinstance(data, list) else set()

    def add_labels(self, repo: str, issue: int, labels: list[str]) -> None:
        self.call("POST", f"/repos/{repo}/issues/{issue}/labels", json={"labels": labels})

    def remove_label(self, repo: str, issue: int, label: str) -> None:
        """Remove a label; one that is not there (404) is fine."""
        self.call("DELETE", f"/repos/{repo}/issues/{issue}/labels/{quote(label, safe='')}", missing_ok=True)

    def label(self, repo: str, name: str) -> dict[str, Any] | None:
        data = self.call("GET", f"/repos/{repo}/labels/{quote(name, safe='')}", missing_ok=True)
        return data if isinstance(data, dict) else None

    def create_issue(self, repo: str, title: str, body: str, labels: list[str] | None = None) -> dict[str, Any]:
        fields: dict[str, Any] = {"title": self.redactor.text(title), "body": self.shown(body)}
        data = self.call("POST", f"/repos/{repo}/issues", json={**fields, **({"labels": labels} if labels else {})})
        return {"number": int(data["number"]), "url": str(data.get("html_url", ""))}

    def issues_labelled(self, repo: str, label: str) -> list[dict[str, Any]]:
        """The newest 100 issues, open or closed, that carry ``label`` (pull requests left out)."""
        data = self.call("GET", f"/repos/{repo}/issues", params={"labels": label, "state": "all", "per_page": 100})
        found = data if isinstance(data, list) else []
        return [issue for issue in found if isinstance(issue, dict) and "pull_request" not in issue]
