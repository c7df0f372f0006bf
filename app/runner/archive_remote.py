"""``interlock archive --remote URL``: archive the ended runs of a state branch on a remote, such as GitHub.

Why git and not GitHub's API: an archive holds every file of a run byte for byte, so building it through the
API would read each file (a run of 3,000 missions has about 9,000) and send them all back as base64 in a
mutation. Git fetches the state branch in one request and pushes the archive commits in another; neither is an
API request, so neither counts against the installation's content quota (80 a minute, 500 an hour).

In a scratch bare repository: the state branch is fetched, each due run is archived on it by the same code as
on a local branch (``app/store/archive_git.py``), and the result is pushed as a fast-forward of the head
fetched. A writer that moved the branch meanwhile (the service saving a transition, a mission job storing its
record) makes the push fail, and the whole pass starts again on the new head: nothing a writer saved is lost
(SPEC J2), and the archive commits made on the old head are dropped with the scratch repository.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from app.runner.remote import Remote
from app.store.archive_git import ArchiveRefused, archive_run, due_on_branch
from app.store.journal import STATE_BRANCH

TRIES = 5


def archive_remote(
    url: str, token: str | None, workdir: Path, days: int, now: datetime, run_id: str | None = None
) -> list[tuple[str, bool]]:
    """Each run archived on ``url``'s state branch, with whether it was archived now (``False``: already);
    ``run_id`` alone if given (whatever its age), else every run due at ``days``. ``workdir``: an empty folder."""
    workdir.mkdir(parents=True, exist_ok=True)
    remote = Remote(workdir, token=token, remote=url)
    remote.git("init", "--quiet", "--bare")
    local = f"refs/heads/{STATE_BRANCH}"
    for _ in range(TRIES):
        head = remote.fetch(STATE_BRANCH)
        if head is None:
            raise ArchiveRefused(f"{url} has no {STATE_BRANCH} branch: no runs to archive")
        remote.git("update-ref", local, head)
        names = [run_id] if run_id is not None else due_on_branch(workdir, now, days)
        done = [(name, archive_run(workdir, name)) for name in names]
        tip = remote.head(local)
        if tip == head or remote.push(tip, STATE_BRANCH):
            return done
    raise ArchiveRefused(f"{STATE_BRANCH} of {url} kept moving ({TRIES} tries): nothing archived, run it again")
