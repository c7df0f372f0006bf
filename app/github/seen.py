"""What GitHub shows of a run, as a redelivery finds it: the comments and labels of its issue, read once.

A redelivery carries out what the saved record still owes (``app/engine/owed.py``), each effect once. There
is no database: GitHub is the store, so "was it done?" is asked of GitHub itself wherever GitHub can answer —
a job among the branch's dispatched runs, a pull request and whether it is a draft, the reviewers asked, a
label, a comment. Every comment Interlock posts for an effect carries a hidden mark naming the effect (the
run, its kind, and the mission and hop counts of the transition that emitted it, which later saves of the
same state never change), so the comment can be found again. A graph event (``repository_dispatch``)
leaves nothing to find: the shell records it in the run record instead (``EVENTS_SENT``).
"""

from __future__ import annotations

from typing import Any, assert_never

from app.engine.decisions import newest_decided
from app.engine.effects import Effect, Escalate, FileRequest, MessageKind, PostMessage
from app.engine.record import Run
from app.github.client import Installation

MARK = "<!-- interlock:effect run={run_id} {mark} -->"


def posted_as_comment(kind: MessageKind) -> bool:
    """Whether a message of ``kind`` becomes a comment of its own (and so carries a mark); the others only
    change the status comment. A new kind must be placed here: mypy fails at ``assert_never`` until it is."""
    match kind:
        case MessageKind.GATE | MessageKind.QUESTION | MessageKind.UPSTREAM | MessageKind.AUTOPILOT:
            return True
        case MessageKind.DECIDED:  # under the decision file: who chose which option, and when
            return True
        case MessageKind.END | MessageKind.STOPPED | MessageKind.CANCELLED | MessageKind.DONE:
            return False
        case _:
            assert_never(kind)


POSTED_KINDS = tuple(kind for kind in MessageKind if posted_as_comment(kind))


def effect_mark(run: Run, effect: Effect) -> str | None:
    """The hidden mark of the comment an effect posts; ``None`` for an effect that posts none."""
    counts = f"{run.mission_count}.{run.hop_count}"
    if isinstance(effect, PostMessage) and effect.kind is MessageKind.AUTOPILOT:
        mark = f"autopilot@{run.hop_count}"  # owed by its hop, whatever missions ran since
    elif isinstance(effect, PostMessage) and effect.kind is MessageKind.DECIDED:
        decided = newest_decided(run)  # one outcome per decision, whatever the transition made since
        mark = f"decided@{decided.number if decided else 0}"
    elif isinstance(effect, PostMessage) and posted_as_comment(effect.kind):
        mark = f"{effect.kind}@{counts}"
    elif isinstance(effect, Escalate):
        mark = f"escalate@{counts}"
    elif isinstance(effect, FileRequest):
        mark = f"request@{effect.key}"
    else:
        return None
    return MARK.format(run_id=run.id, mark=mark)


class Seen:
    """The issue's comments and labels, each read at most once per redelivery, and only when asked."""

    def __init__(self, api: Installation, repo: str, issue: int, after: str | None = None) -> None:
        """``after``: comments updated before then are not read (none made since can carry a run's marks)."""
        self.api, self.repo, self.issue, self.after = api, repo, issue, after
        self._comments: list[dict[str, Any]] | None = None
        self._labels: set[str] | None = None

    def comments(self) -> list[dict[str, Any]]:
        if self._comments is None:
            self._comments = self.api.issue_comments(self.repo, self.issue, after=self.after) if self.issue else []
        return self._comments

    def posted(self, mark: str) -> bool:
        return any(mark in comment["body"] for comment in self.comments())

    def comment_body(self, comment_id: int) -> str | None:
        return next((c["body"] for c in self.comments() if c["id"] == comment_id), None)

    def labels(self) -> set[str]:
        if self._labels is None:
            self._labels = self.api.labels(self.repo, self.issue) if self.issue else set()
        return self._labels
