"""GitHub API calls by method and kind, and each installation's remaining rate limit (SPEC W6), from the
answers this process's App clients received (``app/github/usage.py``).

Bounded memory: methods and kinds come from closed sets (``usage.METHODS``, ``usage.WORDS``) and at most
``MAX_KINDS`` kinds are kept (later ones counted as ``other``); the gauge keeps the latest ``MAX_INSTALLATIONS``
(installation, resource) pairs, the least recently heard forgotten first. Installation ids reach it only from
the App's own clients, made for signed deliveries.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict

from app.github import usage
from app.webhooks.prometheus import family, series

MAX_KINDS = 64
MAX_INSTALLATIONS = 1_000
RESOURCES = frozenset(
    {"core", "graphql", "search", "code_search", "integration_manifest", "actions_runner_registration"}
)


class ApiMetrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Counter[tuple[str, str]] = Counter()
        self.kinds: set[str] = set()
        self.remaining: OrderedDict[tuple[str, str], int] = OrderedDict()
        usage.watch(self)

    def answer(self, answer: usage.Answer) -> None:
        with self.lock:
            kind = answer.kind if answer.kind in self.kinds or len(self.kinds) < MAX_KINDS else "other"
            self.kinds.add(kind)
            self.calls[(answer.method, kind)] += 1
            if answer.remaining is None:
                return
            key = (answer.installation, answer.resource if answer.resource in RESOURCES else "other")
            self.remaining[key] = answer.remaining
            self.remaining.move_to_end(key)
            while len(self.remaining) > MAX_INSTALLATIONS:
                self.remaining.popitem(last=False)

    def render(self) -> list[str]:
        with self.lock:
            calls = [
                series("interlock_github_api_calls_total", {"method": m, "kind": k}, n)
                for (m, k), n in sorted(self.calls.items())
            ]
            left = [
                series("interlock_github_ratelimit_remaining", {"installation": i, "resource": r}, n)
                for (i, r), n in sorted(self.remaining.items())
            ]
        return [
            *family(
                "interlock_github_api_calls_total", "counter", "GitHub API calls answered, by method and kind.", calls
            ),
            *family(
                "interlock_github_ratelimit_remaining",
                "gauge",
                "Requests left in the rate limit window, by installation and resource, as GitHub last said.",
                left,
            ),
        ]
