"""Reviews a gate does not count, answered on the pull request (SPEC GH5, H5, H6).

The engine decides (``app/engine/gates.py``): a review of another commit than the one the gate opened on, or
the requester's own approval where duties are separated, changes nothing. Here the reviewer is told why, in one
comment on the pull request: the comment carries a hidden mark naming the review, so a redelivery of the same
review (or a second replica) finds it and says nothing again. The answer costs calls only on this refused path.
"""

from __future__ import annotations

from typing import Any

from app.engine.errors import GateRefused
from app.github.seen import MARK
from app.webhooks.delivery import Delivery, number_at, text_at
from app.webhooks.router import Outcome
from app.webhooks.shell import GitHubRuns


def review_commit(payload: Any) -> str:
    """The commit a review is of, ``review.commit_id``, read leniently: a review that names none (the field
    absent, null or not text) is of no commit, ``""``, which no gate's head equals."""
    return (text_at(payload, "review", "commit_id") or "").strip()


def answer_refused(runs: GitHubRuns, delivery: Delivery, run_id: str, reviewer: str, refused: GateRefused) -> Outcome:
    """One comment on the pull request saying why the review changed nothing."""
    pull = number_at(delivery.payload, "pull_request", "number")
    review = number_at(delivery.payload, "review", "id")
    if pull is None:
        return Outcome.IGNORED
    mark = MARK.format(run_id=run_id, mark=f"review-refused@{review if review is not None else delivery.delivery_id}")
    runs.api.comment_once(runs.repo, pull, f"@{reviewer} {refused.message}. Nothing changed.", mark)
    return Outcome.HANDLED
