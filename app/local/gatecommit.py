"""What a local approval is of (SPEC H5): the run branch as it is when the person approves.

On GitHub a review names its commit. At the terminal, or with ``interlock approve``/``amend``, the person
approves the run branch they look at (``git diff BASE...BRANCH``), so the approval implies the branch's head
now. When something moved the branch after the gate opened (a commit by hand on the run branch), the engine
refuses the approval with both commits named: that commit was not what the gate opened on. A branch git cannot
read names no commit, and is not compared.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.events import Event, GateAmended, GateApproved
from app.engine.record import Run
from app.gitaccess import GitFailed
from app.local.gitops import Repo


def reviewed_commit(event: Event, repo: Repo, run: Run) -> Event:
    """``event`` naming the run branch's head, when it is a gate's approval or amendment that names none."""
    if not isinstance(event, GateApproved | GateAmended) or event.commit is not None:
        return event
    try:
        head = repo.git("rev-parse", "--verify", "--quiet", f"refs/heads/{run.branch}^{{commit}}").strip()
    except GitFailed:
        return event
    return replace(event, commit=head) if head else event
