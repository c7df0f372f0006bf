"""Prometheus text metrics of deliveries: counts by event, outcome and status, and a latency histogram.

Bounded memory: one counter per (event, outcome, status) seen — a small set — whatever the number of
deliveries. https://prometheus.io/docs/instrumenting/exposition_formats/
"""

from __future__ import annotations

import threading
from collections import Counter

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deliveries: Counter[tuple[str, str, int]] = Counter()
        self.buckets = [0] * len(BUCKETS)
        self.count = 0
        self.total_s = 0.0

    def observe(self, event: str, outcome: str, status: int, seconds: float) -> None:
        with self.lock:
            self.deliveries[(event[:64], outcome[:64], status)] += 1
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
                    f'interlock_deliveries_total{{event="{_label(event)}",outcome="{_label(outcome)}",'
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
            return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
