"""Prometheus text metrics of deliveries: counts by event, outcome and status, and a latency histogram; then
the runs, transitions and model spend (``run_metrics.py``) and the GitHub API calls (``api_metrics.py``).

Bounded memory: one counter per (event, outcome, status) seen, whatever the number of deliveries. Every
label comes from a closed set the service chose — an event label is one of the events the service handles,
else ``other``, and a request that was not authenticated is labelled ``unverified`` — so that no header of
an unsigned request can add a series (a flood of made-up event names would otherwise grow /metrics without
bound). https://prometheus.io/docs/instrumenting/exposition_formats/
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from app.webhooks.api_metrics import ApiMetrics
from app.webhooks.prometheus import family, label, series
from app.webhooks.run_metrics import RunMetrics

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


# what happens to a queued delivery, counted; and ``swept``: a failed delivery the sweep asked GitHub to redeliver
QUEUE_ENDS = ("queued", "applied", "retried", "deferred", "failed", "swept")

OTHER = "other"  # a signed delivery of an event the service has no handler for
UNVERIFIED = "unverified"  # a request refused before its signature was verified: its headers are not trusted


class Metrics:
    def __init__(self, events: frozenset[str] = frozenset()) -> None:
        self.events = events
        self.lock = threading.Lock()
        self.deliveries: Counter[tuple[str, str, int]] = Counter()
        self.buckets = [0] * len(BUCKETS)
        self.count = 0
        self.total_s = 0.0
        self.runs = RunMetrics()  # what this process sees from now on (SPEC W6)
        self.api = ApiMetrics()
        self.queue: Counter[str] = Counter()
        self.waiting: Callable[[], int | None] | None = None  # read when rendered; None: unreachable

    def count_queue(self, kind: str) -> None:
        """One delivery ``queued``, ``applied``, ``retried``, ``deferred`` (to wait for the content quota),
        ``failed`` or ``swept`` (``QUEUE_ENDS``)."""
        assert kind in QUEUE_ENDS, kind
        with self.lock:
            self.queue[kind] += 1

    def render_queue(self) -> list[str]:
        with self.lock:
            counted = [series("interlock_queue_deliveries_total", {"kind": k}, self.queue[k]) for k in QUEUE_ENDS]
        help_text = "Deliveries queued, applied, retried, deferred for the quota, failed; and the sweep's redeliveries."
        lines = family("interlock_queue_deliveries_total", "counter", help_text, counted)
        if self.waiting is not None and (count := self.waiting()) is not None:  # no gauge while the queue is down
            gauge = [series("interlock_queue_waiting", {}, count)]
            lines += family("interlock_queue_waiting", "gauge", "Deliveries waiting in the queue.", gauge)
        return lines

    def event_label(self, event: str) -> str:
        """The label for a verified delivery's ``X-GitHub-Event``: a known event's name, else ``other``."""
        return event if event in self.events else OTHER

    def observe(self, label: str, outcome: str, status: int, seconds: float) -> None:
        """Count one answer; ``label`` is ``event_label(...)`` or ``UNVERIFIED``, ``outcome`` the service's own
        words (an ``Outcome`` or a fixed error message), never text from the request."""
        with self.lock:
            self.deliveries[(label, outcome[:64], status)] += 1
            self.count += 1
            self.total_s += seconds
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.buckets[index] += 1

    def render(self) -> str:
        with self.lock:
            lines = [
                "# HELP interlock_deliveries_total Webhook deliveries by event, outcome and HTTP status.",
                "# TYPE interlock_deliveries_total counter",
            ]
            for (event, outcome, status), count in sorted(self.deliveries.items()):
                lines.append(
                    f'interlock_deliveries_total{{event="{label(event)}",outcome="{label(outcome)}",'
                    f'status="{status}"}} {count}'
                )
            lines += [
                "# HELP interlock_delivery_seconds Time to answer a delivery.",
                "# TYPE interlock_delivery_seconds histogram",
            ]
            lines += [
                f'interlock_delivery_seconds_bucket{{le="{bound}"}} {count}'
                for bound, count in zip(BUCKETS, self.buckets, strict=True)
            ]
            lines += [
                f'interlock_delivery_seconds_bucket{{le="+Inf"}} {self.count}',
                f"interlock_delivery_seconds_sum {self.total_s:.6f}",
                f"interlock_delivery_seconds_count {self.count}",
            ]
        return "\n".join([*lines, *self.render_queue(), *self.runs.render(), *self.api.render()]) + "\n"
