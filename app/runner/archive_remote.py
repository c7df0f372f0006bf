"""``interlock archive --remote URL``: archive the ended runs of a state branch on a remote, such as GitHub.

Why git and not GitHub's API: an archive holds every file of a run byte for byte, so building it through the
API would read each file (a run of 3,000 missions has about 9,000) and send them all back as base64 in a
mutation. Git fetches the state branch in one request and pushes the archive commits in another; neither is an
API request, so neither counts against the installation's content quota (80 a minute, 500 an hour).

In a scratch bare repository: the state branch is fetched, each due run is archived on it by the same code as
on a local branch (``app/store/archive_git.py``), and the result is pushed as a fast-forward of the head
fetched, one run at a time. A writer that moved the branch meanwhile (the service saving a transition, a mission
job storing its record) makes that push fail; the branch is fetched again and the pass goes on from that run on
the new head: nothing a writer saved is lost (SPEC J2), and the archive commit made on the old head is dropped.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from app.runner.remote import Remote
from app.store.archive_git import ArchiveRefused, archive_run, due_on_branch
from app.store.journal import STATE_BRANCH

TRIES = 5
LOCAL = f"refs/heads/{STATE_BRANCH}"


def shown(url: str) -> str:
    """``url`` as a message may name it: without the user and password a URL can carry (a token, often)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def archive_remote(
    url: str, token: str | None, workdir: Path, days: int, now: datetime, run_id: str | None = None
) -> list[tuple[str, bool]]:
    """Each run archived on ``url``'s state branch, with whether it was archived now (``False``: already);
    ``run_id`` alone if given (whatever its age), else every run due at ``days`` when the pass began.
    ``workdir``: an empty folder. Each archive is pushed on its own, so a busy branch costs one run's work."""
    workdir.mkdir(parents=True, exist_ok=True)
    remote = Remote(workdir, token=token, remote=url)
    remote.git("init", "--quiet", "--bare")
    names: list[str] | None = None
    done: dict[str, bool] = {}
    misses = 0  # pushes refused in a row because the branch had moved
    while misses < TRIES:
        head = _fetched(remote, url)
        names = names if names is not None else [run_id] if run_id is not None else due_on_branch(workdir, now, days)
        before = len(done)
        for name in [name for name in names if name not in done]:
            packed = archive_run(workdir, name)
            tip = remote.head(LOCAL)
            if tip != head and not remote.push(tip, STATE_BRANCH):
                break  # a writer moved the branch: fetch its head and go on from this run
            done[name], head = packed, tip
        else:
            return [(name, done[name]) for name in names]
        misses = 0 if len(done) > before else misses + 1
    raise ArchiveRefused(f"{STATE_BRANCH} of {shown(url)} kept moving ({TRIES} pushes refused in a row): run it again")


def _fetched(remote: Remote, url: str) -> str:
    """The remote's state branch fetched and made this repository's own, its head returned."""
    head = remote.fetch(STATE_BRANCH)
    if head is None:
        raise ArchiveRefused(f"{shown(url)} has no {STATE_BRANCH} branch: no runs to archive")
    remote.git("update-ref", LOCAL, head)
    return head
