"""Validation time for generated graphs of 100, 1,000 and 10,000 nodes with 3 edges each.

Run: ``python -m tests.bench.bench_validate`` (prints a table; not a test, so it never flakes).
Targets: 10,000 nodes in under 0.5 s; 10x the nodes costs at most 15x the time.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from typing import Any

from app.engine.graph.validate import validate_graph

SIZES = (100, 1_000, 10_000)
TARGET_10K_S = 0.5
TARGET_GROWTH = 15.0


def generated_graph(size: int) -> dict[str, Any]:
    """A chain of review loops: PASS forward, FAIL back, and a catch-all to a far node."""
    nodes = [
        {"stage": f"s{i}", "capability": ("coding", "review", "testing")[i % 3], "maxVisits": 3} for i in range(size)
    ]
    edges = []
    for i in range(size):
        forward = f"s{i + 1}" if i + 1 < size else "__end__"
        edges.append({"from": f"s{i}", "verdict": "PASS", "to": forward})
        edges.append({"from": f"s{i}", "verdict": "FAIL", "to": f"s{max(i - 1, 0)}"})
        edges.append({"from": f"s{i}", "verdict": "*", "to": f"s{(i * 7) % size}"})
    return {"name": f"bench-{size}", "entry": "s0", "nodes": nodes, "edges": edges}


def median_seconds(data: dict[str, Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        outcome = validate_graph(data)
        samples.append(time.perf_counter() - start)
        assert outcome.valid, outcome.errors[:3]
        del outcome  # freeing the previous graph must not be timed with the next validation
    return statistics.median(samples)


def main() -> int:
    print(f"{'nodes':>8} {'edges':>8} {'median':>11} {'per node':>10} {'growth':>8}")
    previous: float | None = None
    results: dict[int, float] = {}
    for size in SIZES:
        seconds = median_seconds(generated_graph(size), repeats=max(7, 30_000 // size))
        results[size] = seconds
        growth = f"{seconds / previous:7.1f}x" if previous else "       -"
        print(f"{size:>8,} {size * 3:>8,} {seconds * 1000:>9.2f}ms {seconds / size * 1e6:>8.2f}us {growth}")
        previous = seconds
    worst_growth = max(results[b] / results[a] for a, b in itertools.pairwise(SIZES))
    ok = results[10_000] < TARGET_10K_S and worst_growth <= TARGET_GROWTH
    print(
        f"10,000 nodes: {results[10_000]:.3f}s (target < {TARGET_10K_S}s); "
        f"worst growth for 10x nodes: {worst_growth:.1f}x (target <= {TARGET_GROWTH:.0f}x): {'OK' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
