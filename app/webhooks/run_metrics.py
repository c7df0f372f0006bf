"""Runs by status and team, transitions by event kind, and model calls, tokens and cost by ledger category, as
this process saw the run driver save them (SPEC W6).

Why per process: a replica sees the transitions of the deliveries it answered, and nothing else; reading every
state branch of every installation on each scrape would spend the API quota the runs need. So the gauge counts
the runs this process saw start or move since it started, each by its latest status; Prometheus sums the
replicas. Bounded memory: at most ``MAX_RUNS`` runs are remembered (the least recently moved forgotten first),
at most ``MAX_TEAMS`` team names label a series (later ones are counted as ``other``), and every other label
comes from a closed set of the engine: its statuses, its event kinds and its ledger categories.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict

from app.runner import observe
from app.runner.saved import Saved
from app.webhooks.prometheus import family, series

MAX_RUNS = 10_000
MAX_TEAMS = 50
OTHER_TEAM = "other"


class RunMetrics:
    """Watches the driver's transitions (``app/runner/observe.py``) from the moment it is made."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: OrderedDict[tuple[str, str], tuple[str, str]] = OrderedDict()  # (repo, run) -> (status, team)
        self.teams: set[str] = set()
        self.shown: set[tuple[str, str]] = set()  # every (status, team) reported once: 0 rather than gone
        self.transitions: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.cost_usd: dict[str, float] = {}
        self.tokens: Counter[tuple[str, str]] = Counter()
        observe.watch(self)

    def transition(self, saved: Saved) -> None:
        with self.lock:
            key = (saved.repository, saved.after.id)
            self.runs[key] = (saved.after.status.value, self._team(saved.after.team))
            self.runs.move_to_end(key)
            while len(self.runs) > MAX_RUNS:
                self.runs.popitem(last=False)
            self.transitions[saved.kind] += 1
            usage, category = saved.usage(), saved.category()
            if usage is not None and category is not None:
                self.calls[category.value] += usage.calls
                self.cost_usd[category.value] = self.cost_usd.get(category.value, 0.0) + (usage.cost_usd or 0.0)
                self.tokens[(category.value, "input")] += usage.input_tokens
                self.tokens[(category.value, "output")] += usage.output_tokens

    def _team(self, team: str) -> str:
        if team in self.teams or len(self.teams) < MAX_TEAMS:
            self.teams.add(team)
            return team
        return OTHER_TEAM

    def render(self) -> list[str]:
        with self.lock:
            now = Counter(self.runs.values())
            self.shown |= set(now)
            return [
                *family(
                    "interlock_runs",
                    "gauge",
                    "Runs this process saw start or move since it started, by their latest status and team.",
                    [series("interlock_runs", {"status": s, "team": t}, now[(s, t)]) for s, t in sorted(self.shown)],
                ),
                *family(
                    "interlock_transitions_total",
                    "counter",
                    "Transitions saved by this process, by event kind.",
                    [
                        series("interlock_transitions_total", {"event": k}, n)
                        for k, n in sorted(self.transitions.items())
                    ],
                ),
                *self._spend(),
            ]

    def _spend(self) -> list[str]:
        calls = [series("interlock_model_calls_total", {"category": c}, n) for c, n in sorted(self.calls.items())]
        cost = [series("interlock_model_cost_usd_total", {"category": c}, n) for c, n in sorted(self.cost_usd.items())]
        tokens = [
            series("interlock_model_tokens_total", {"category": c, "direction": d}, n)
            for (c, d), n in sorted(self.tokens.items())
        ]
        return [
            *family(
                "interlock_model_calls_total", "counter", "Model calls missions reported, by ledger category.", calls
            ),
            *family(
                "interlock_model_cost_usd_total", "counter", "Known cost missions reported, by ledger category.", cost
            ),
            *family("interlock_model_tokens_total", "counter", "Tokens missions reported, by ledger category.", tokens),
        ]
