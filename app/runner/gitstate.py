"""The delivery's git state, read by a mission's job and kept in its mission record (SPEC E2, U7).

A decision file shows what the run delivered: the run branch's head, its commits ahead of the base, the
files it changes and the files a merge would conflict in, and the same for each satellite repository. On a
person's machine the local shell reads that from the repository after each mission. On GitHub the service
has no clone, so the deliver phase of the job reads it — in its scratch repository, with git, after it
pushed — and stores it in the mission record as ``git``; the service builds the engine's ``GitState`` from
that record (``app/runner/outcomes.py``), at no API call. The record is data anyone with push access could
write, so it is read leniently: a field of the wrong kind is left out, never an error.

Reading the state never costs the mission: a repository that cannot be read is left out of ``git``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from app.engine.errors import InterlockError
from app.engine.events import GitState
from app.engine.record import Run
from app.gitaccess import ON_GITHUB, branch_state, git_output, isolated_env
from app.runner.partial import BLOBLESS
from app.runner.remote import Remote
from app.runner.satellites import satellite_url


def delivered_state(remote: Remote, run: Run, url: str, token: str | None) -> dict[str, Any] | None:
    """The ``git`` of the mission record: the run branch against the run's base, with each satellite's run
    branch against its default branch; ``None`` when the main repository's cannot be read."""
    main = _state(remote, run.branch, run.base)
    if main is None:
        return None
    found: dict[str, Any] = {}
    for repo in run.satellites:
        with tempfile.TemporaryDirectory(prefix="interlock-state-") as scratch:
            git_output(["init", "--quiet", "--bare", scratch], None, isolated_env(ON_GITHUB))
            satellite = Remote(Path(scratch), token=token, remote=satellite_url(url, repo), partial=BLOBLESS)
            base = _default_branch(satellite)
            state = _state(satellite, run.branch, base) if base is not None else None
        if state is not None:
            found[repo] = state_data(state)
    return {**state_data(main), **({"satellites": found} if found else {})}


def _state(remote: Remote, branch: str, base: str) -> GitState | None:
    try:
        if remote.fetch(branch) is None or remote.fetch(base) is None:
            return None
    except InterlockError:
        return None
    return branch_state(remote.workdir, remote.env, f"refs/interlock/{branch}", f"refs/interlock/{base}")


def _default_branch(remote: Remote) -> str | None:
    """The repository's default branch, as its remote ``HEAD`` names it: a satellite's pull request goes there."""
    try:
        listed = remote.git("ls-remote", "--symref", remote.remote, "HEAD").decode(errors="replace")
    except InterlockError:
        return None
    for line in listed.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line.removeprefix("ref: refs/heads/").removesuffix("\tHEAD")
    return None


def state_data(state: GitState) -> dict[str, Any]:
    return {
        "head": state.head,
        "ahead": state.ahead,
        "files_changed": list(state.files_changed),
        "conflicts": list(state.conflicts),
    }


def read_state(data: Any) -> GitState | None:
    """The ``GitState`` a record's ``git`` says, field by field (a wrong kind is left out); ``None`` when the
    record has none: the decision file then says the state is not available rather than showing none."""
    if not isinstance(data, dict):
        return None
    satellites = data.get("satellites")
    entries = satellites.items() if isinstance(satellites, dict) else ()
    found = tuple((repo, _one(entry)) for repo, entry in entries if isinstance(repo, str) and isinstance(entry, dict))
    head, ahead = data.get("head"), data.get("ahead")
    return GitState(
        head=head if isinstance(head, str) else "",
        ahead=ahead if isinstance(ahead, int) and not isinstance(ahead, bool) and ahead >= 0 else 0,
        files_changed=_names(data.get("files_changed")),
        conflicts=_names(data.get("conflicts")),
        satellites=found,
    )


def _one(entry: dict[str, Any]) -> GitState:
    """A satellite's state: a satellite of a satellite means nothing."""
    state = read_state({**entry, "satellites": None})
    assert state is not None  # a dict always reads
    return state


def _names(value: Any) -> tuple[str, ...]:
    return tuple(name for name in value if isinstance(name, str)) if isinstance(value, list) else ()
