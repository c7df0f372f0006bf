"""The delivery checked against its base before it is proposed (SPEC V9).

Why here, in the engine, and on the git state an event carries: the engine cannot read git, and the shells
already read the delivery's state after every mission — on a person's machine from the repository, on GitHub
in the mission's ``deliver`` job, which fetches the run branch and the base anyway and keeps the state in the
mission record (``app/runner/gitstate.py``) — with ``git merge-tree --write-tree``, which names the conflicting
files. So the check costs no API call and no extra transition on the normal path, and it is as fresh as the
base was when the last mission ended. GitHub's own ``mergeable`` field of a pull request was the other way:
it costs a call, is computed asynchronously (``null`` until GitHub has done it, which a webhook must not wait
for) and names no file, which a decision file must.

An event with no git state (a person's review or command on GitHub, where the service has no clone) is checked
against what the newest event that read git found — the last mission's job, on the head a gate's approval is
bound to (SPEC H5) — which the record keeps (``Run.conflicts``). The base may have moved since, and that the
engine cannot know without a call; a person who resolved the conflict by hand since says so with ``deliver``.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.events import GitState
from app.engine.graph.model import CONFLICT, END, Edge, Graph
from app.engine.record import Run

SHOWN_FILES = 20  # files named in the reason's message; the decision file's delivery section lists every one
CONFLICTS_KEPT = 100  # conflicting files the record remembers for an event that reads no git (SPEC J5: bounded)


@dataclass(frozen=True)
class BaseConflict:
    """What a delivery conflicts in, the delivering node's CONFLICT edge (``None``: the run escalates), and the
    words that say so — the reason's message, or the routing line the resolve step's prompt shows."""

    files: tuple[str, ...]
    edge: Edge | None
    message: str


def conflicting_files(git: GitState) -> tuple[str, ...]:
    """The files a merge into the base conflicts in: the run branch's, then each satellite's as ``owner/name:path``
    (its pull request is marked ready too, SPEC U7)."""
    found = list(git.conflicts)
    for repo, state in git.satellites:
        found += [f"{repo}:{name}" for name in state.conflicts]
    return tuple(found)


def remember_git(run: Run, git: GitState) -> None:
    """Keep what an event that read git found: the head a gate opens on (SPEC H5) and the files a merge into the
    base conflicts in (V9), for a later event that reads none."""
    if not git.head and not git.conflicting():  # nothing was read (a branch the job could not read): keep what was
        return
    if git.head:
        run.head = git.head
    files = conflicting_files(git)
    run.conflicts = list(files[:CONFLICTS_KEPT])
    run.conflict_count = len(files)


def base_conflict(graph: Graph, run: Run, git: GitState | None) -> BaseConflict | None:
    """The conflict of a delivery about to end ``run`` from its stage, or ``None`` when none is known. A
    supervision run proposes no merge (SPEC U6): nothing of its branch is checked."""
    if run.supervision:
        return None
    files = conflicting_files(git) if git is not None else tuple(run.conflicts)
    count = len(files) if git is not None else run.conflict_count
    if not files:
        return None
    edges = graph.outgoing(run.stage) if graph.has_stage(run.stage) else ()
    edge = next((edge for edge in edges if edge.verdict.casefold() == CONFLICT.casefold()), None)
    if edge is not None and edge.target == END:  # the end again: it would conflict again, for ever
        edge = None
    more = f" and {count - SHOWN_FILES} more" if count > SHOWN_FILES else ""
    shown = ", ".join(files[:SHOWN_FILES]) + more
    message = f"the run branch {run.branch!r} conflicts with its base {run.base!r} in {count} file(s): {shown}"
    if git is None:
        message += (
            f" (as the last check found it, at {run.head[:12] or 'the head it read'}; if the conflict was resolved "
            "since, `deliver` ends the run unchecked)"
        )
    return BaseConflict(files, edge, message)
