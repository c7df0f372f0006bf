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

SHOWN_FILES = 20  # files named in the reason's message; the decision file's delivery section lists every one


@dataclass(frozen=True)
class BaseConflict:
    """What a delivery conflicts in, and the delivering node's CONFLICT edge (``None``: the run escalates)."""

    files: tuple[str, ...]
    edge: Edge | None

    def message(self, branch: str, base: str) -> str:
        shown = ", ".join(self.files[:SHOWN_FILES])
        more = f" and {len(self.files) - SHOWN_FILES} more" if len(self.files) > SHOWN_FILES else ""
        return f"the run branch {branch!r} conflicts with its base {base!r} in {len(self.files)} file(s): {shown}{more}"


def conflicting_files(git: GitState) -> tuple[str, ...]:
    """The files a merge into the base conflicts in: the run branch's, then each satellite's as ``owner/name:path``
    (its pull request is marked ready too, SPEC U7)."""
    found = list(git.conflicts)
    for repo, state in git.satellites:
        found += [f"{repo}:{name}" for name in state.conflicts]
    return tuple(found)


def base_conflict(graph: Graph, stage: str, git: GitState | None) -> BaseConflict | None:
    """The conflict of a delivery about to end the run from ``stage``, or ``None`` when there is none known."""
    if git is None or not git.conflicting():
        return None
    edges = graph.outgoing(stage) if graph.has_stage(stage) else ()
    edge = next((edge for edge in edges if edge.verdict.casefold() == CONFLICT.casefold()), None)
    if edge is not None and edge.target == END:  # the end again: it would conflict again, for ever
        edge = None
    return BaseConflict(conflicting_files(git), edge)
