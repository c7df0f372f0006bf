"""The delivery checked against its base before it is proposed (SPEC V9).

Why here, in the engine, and on the git state an event carries: the engine cannot read git, and the shells
already read the delivery's state after every mission — on a person's machine from the repository, on GitHub
in the mission's ``deliver`` job, which fetches the run branch and the base anyway and keeps the state in the
mission record (``app/runner/gitstate.py``) — with ``git merge-tree --write-tree``, which names the conflicting
files. So the check costs no API call and no extra transition on the normal path, and it is as fresh as the
base was when the last mission ended. GitHub's own ``mergeable`` field of a pull request was the other way:
it costs a call, is computed asynchronously (``null`` until GitHub has done it, which a webhook must not wait
for) and names no file, which a decision file must.

An event with no git state (a person's command on GitHub, where the service has no clone) is not checked: the
engine never guesses a conflict, and never guesses its absence either — the run ends as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.events import GitState
from app.engine.graph import CONFLICT, END, Edge, Graph
from app.engine.record import Run

SHOWN_FILES = 20  # files named in the reason's message; the decision file's delivery section lists every one


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


def base_conflict(graph: Graph, run: Run, git: GitState | None) -> BaseConflict | None:
    """The conflict of a delivery about to end ``run`` from its stage, or ``None`` when none is known. A
    supervision run proposes no merge (SPEC U6): nothing of its branch is checked."""
    if git is None or run.supervision or not git.conflicting():
        return None
    edges = graph.outgoing(run.stage) if graph.has_stage(run.stage) else ()
    edge = next((edge for edge in edges if edge.verdict.casefold() == CONFLICT.casefold()), None)
    if edge is not None and edge.target == END:  # the end again: it would conflict again, for ever
        edge = None
    files = conflicting_files(git)
    more = f" and {len(files) - SHOWN_FILES} more" if len(files) > SHOWN_FILES else ""
    shown = ", ".join(files[:SHOWN_FILES]) + more
    message = f"the run branch {run.branch!r} conflicts with its base {run.base!r} in {len(files)} file(s): {shown}"
    return BaseConflict(files, edge, message)
