"""What a service replica keeps of a repository's configuration between deliveries (issue 27), and why it may.

Reading ``.github/interlock.yml`` (and what it extends) costs a call or more at every delivery, so a process keeps
it, for at most ``CONFIG_TTL_S``. But several replicas serve one App, and a person may change the file at any
moment: a replica must never act on a configuration read at an earlier head of the default branch than the one
it can see. Every record's read (``GitHubStore.load``) brings the default branch's head in the same GraphQL call
(``GitHubStore.watched``), so the check costs no call: a configuration kept from an earlier head is forgotten,
in the delivery and in the process's cache, and read again when the transition needs it (an order's advisor,
prices and team, ``GitHubRuns._order_terms``). One read in this delivery before the record (the checks of a
delivery need it first) is kept for the head read just after; one kept from an unknown head (a start reads no
record) is tied to that head, within the time it was kept for already. An extended repository's head is not read
with the record: its file is kept ``CONFIG_TTL_S`` at most, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.github.config import RepoConfig

CONFIG_TTL_S = 60.0
CONFIG_CACHE: dict[str, tuple[float, str, RepoConfig]] = {}  # repo -> when read, the default head ("": unknown)


class KeptConfig:
    """One delivery's configuration of ``repo``; ``head`` says the default branch's head read so far, if any."""

    def __init__(self, repo: str, head: Callable[[], str | None]) -> None:
        self.repo, self.head = repo, head
        self.kept: RepoConfig | None = None
        self.kept_head = ""  # the default branch's head it is known to be read at ("": unknown)
        self.read = False  # read in this delivery (else kept from an earlier one)

    def config(self, load: Callable[[], RepoConfig]) -> RepoConfig:
        if self.kept is None:
            cached = CONFIG_CACHE.get(self.repo)
            if cached is not None and time.monotonic() - cached[0] < CONFIG_TTL_S:
                self.kept, self.kept_head = cached[2], cached[1]
            else:
                head = self.head() or ""  # read before the file: the file is at least as new
                self.kept, self.kept_head, self.read = load(), head, True
                CONFIG_CACHE[self.repo] = (time.monotonic(), head, self.kept)
        return self.kept

    def check(self, head: str | None) -> bool:
        """The default branch's head a record's read brought: whether the configuration kept was forgotten."""
        if head is None:
            return False
        cached = CONFIG_CACHE.get(self.repo)
        if self.kept is not None and self.read and not self.kept_head:
            self.kept_head = head
            CONFIG_CACHE[self.repo] = (time.monotonic(), head, self.kept)
        elif cached is not None and cached[1] in ("", head):
            CONFIG_CACHE[self.repo] = (cached[0], head, cached[2])
            if self.kept is cached[2]:
                self.kept_head = head
        else:
            CONFIG_CACHE.pop(self.repo, None)
            if self.kept is not None and self.kept_head != head:
                self.kept, self.kept_head, self.read = None, "", False
                return True
        return False
