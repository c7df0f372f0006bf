"""Which installation of the App reaches a repository (issue 28 part 5; SPEC U3, U7).

An App is installed once per account (a user or an organisation): its installation token reaches only that
account's repositories the installation was given. A run's own repository, its satellites and the repository
its requests go to may belong to different accounts, so each call about another account's repository is made
with that account's installation, found with the App's JWT (``GET /repos/{owner}/{repo}/installation``) and
remembered for an hour (an App uninstalled and installed again gets a new id). A repository of the same owner
is the same installation: no call. Where the App is not installed, the run's own installation is used and
GitHub's 404 says so to the caller, which already turns it into a clear message (``upstream_unfileable``, an
unreadable satellite).
https://docs.github.com/en/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app
"""

from __future__ import annotations

import time
from weakref import WeakKeyDictionary

from app.github.client import GitHubApp, Installation

REMEMBERED_S = 3600.0  # how long an account's installation id is trusted without asking again
FOUND: WeakKeyDictionary[GitHubApp, dict[str, tuple[int, float]]] = WeakKeyDictionary()


def owner_of(repo: str) -> str:
    return repo.partition("/")[0].casefold()


def installation_for(app: GitHubApp, repo: str, home: str, home_installation: int, fresh: bool = False) -> int:
    """The id of the installation that reaches ``repo``, for a run of ``home`` (installation
    ``home_installation``): the same for the same owner; else the one GitHub names, or ``home_installation``
    when the App is not installed there (its calls then answer 404). ``fresh``: asked again, not remembered —
    at a run's start and for a request, so that an account that installed the App again (a new id) is never
    told the App is missing there."""
    owner = owner_of(repo)
    if owner == owner_of(home):
        return home_installation
    known = FOUND.setdefault(app, {})
    found = None if fresh else known.get(owner)
    if found is not None and time.monotonic() - found[1] < REMEMBERED_S:
        return found[0]
    known.pop(owner, None)
    installed = app.as_app().repo_installation(repo)
    if installed is None or not isinstance(installed.get("id"), int):
        return home_installation
    known[owner] = (int(installed["id"]), time.monotonic())
    return int(installed["id"])


def api_for(app: GitHubApp, api: Installation, repo: str, home: str, home_installation: int) -> Installation:
    """The REST client for calls about ``repo``: ``api`` itself (the home installation's) when it reaches it."""
    chosen = installation_for(app, repo, home, home_installation)
    return api if chosen == home_installation else app.installation(chosen)
