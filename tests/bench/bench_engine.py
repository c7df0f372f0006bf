"""Time of one engine transition, and of context compaction.

Run: ``python -m tests.bench.bench_engine`` (prints a table; not a test, so it never flakes; exits 0 whatever
the figures). ``--profile`` adds a cProfile of each part: the functions where the time goes.

(a) ``step`` on a generated 19-node graph with a review loop — plan, 17 work stages, a review whose FAIL goes
    back to the first work stage — driven by ``MissionFinished`` events for the awaited mission. The review
    always fails, so the run cycles; visit budgets are high and the policy has no limit. Target: median
    <= 30 us per transition. The record grows with the run (context headers and routing lines), so the first
    and the last 200 transitions are reported apart.
(b) ``compact_context`` on fresh contexts of 1, 5 and 10 MB of results of varied sizes, multi-byte UTF-8
    included. Target: 10 MB in under 100 ms, and linear in size (ms per MB about constant).
"""

from __future__ import annotations

import cProfile
import gc
import io
import itertools
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from app.engine.context import Context, Result, compact_context
from app.engine.events import MissionFinished, Start
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus, Run
from app.engine.step import step
from tests.helpers import ROOT

WORK_STAGES = 17
TRANSITIONS = 3_000
WINDOW = 200
TARGET_STEP_US = 30.0
REFERENCES_US = (("LangGraph, no checkpointer", 258.0),)  # published; Burr is measured beside it: bench_burr

SIZES_MB = (1, 5, 10)
TARGET_COMPACT_10MB_MS = 100.0
TARGET_LINEARITY = 2.0  # worst ms/MB at most twice the best
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def loop_graph() -> Graph:
    """plan -> w1 -> ... -> w17 -> review; review FAIL -> w1, PASS -> __end__ (19 nodes)."""
    work = [f"w{i}" for i in range(1, WORK_STAGES + 1)]
    stages = ["plan", *work, "review"]
    nodes: list[dict[str, Any]] = [
        {"stage": stage, "capability": ("planning" if stage == "plan" else "review" if stage == "review" else "coding")}
        for stage in stages
    ]
    for item in nodes:
        item["maxVisits"] = 1_000_000
    edges = [{"from": a, "verdict": "PASS", "to": b} for a, b in itertools.pairwise(stages)]
    edges += [{"from": "review", "verdict": "FAIL", "to": "w1"}, {"from": "review", "verdict": "PASS", "to": "__end__"}]
    return parse_graph({"name": "bench-loop", "entry": "plan", "nodes": nodes, "edges": edges})


def answer_for(stage: str, seq: int) -> str:
    body = f"Mission {seq} at {stage}: changed the files named in the plan; tests added. " * 6
    return body + ("\n1. the error path is untested\nVERDICT: FAIL" if stage == "review" else "\nVERDICT: PASS")


def drive(graph: Graph, transitions: int) -> tuple[list[float], Run]:
    """Per-transition seconds of ``transitions`` MissionFinished steps (event built outside the timing)."""
    run, _ = step(None, Start(key="start", at=T0, run_id="bench", title="Bench", body="Loop forever."), graph)
    samples: list[float] = []
    clock = time.perf_counter
    for index in range(transitions):
        waiting = run.waiting
        assert waiting is not None, run.status
        event = MissionFinished(
            key=f"m{index}",
            at=T0 + timedelta(seconds=index + 1),
            seq=waiting.seq,
            status=MissionStatus.DONE,
            answer=answer_for(waiting.stage, waiting.seq),
            commits=1,
        )
        start = clock()
        run, _ = step(run, event, graph)
        samples.append(clock() - start)
    return samples, run


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def utf8_text(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of text mixing ASCII with 2-, 3- and 4-byte characters."""
    pieces = ["the change is fine ", "réservé à l'équipe ", "日本語のテキスト ", "emoji 🚀🧪 ", "x = f(y) + 1\n"]
    out: list[str] = []
    total = 0
    while total < size:
        piece = rng.choice(pieces)
        out.append(piece)
        total += len(piece.encode("utf-8"))
    return "".join(out)


def context_of(megabytes: int, seed: int = 7) -> tuple[Context, int, int]:
    """A fresh (uncompacted) context of about ``megabytes`` MB of results from 200 bytes to 64 kB each."""
    rng = random.Random(seed)
    target = megabytes * 1_000_000
    results: list[Result] = []
    total = 0
    while total < target:
        size = min(int(rng.lognormvariate(8.5, 1.2)) + 200, 64_000, target - total + 200)
        body = utf8_text(rng, size)
        seq = len(results) + 1
        routing = [f"VERDICT: {'FAIL' if seq % 3 == 0 else 'PASS'} → w{seq % 17 + 1}"]
        results.append(Result(seq=seq, stage=f"w{seq % 17 + 1}", visit=seq // 17 + 1, kind="deliver", body=body))
        results[-1].routing.extend(routing)
        total += len(body.encode("utf-8"))
    return Context(results=results), len(results), total


def time_compaction(context: Context, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        compacted = compact_context(context)
        samples.append(time.perf_counter() - start)
        del compacted
    return statistics.median(samples)


def profile(label: str, work: Callable[[], object], top: int = 14) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    work()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("tottime")
    total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
    print(f"\nprofile of {label} (top {top} by own time; total {total * 1000:.1f} ms under the profiler):")
    print(f"{'own %':>7} {'own ms':>9} {'cum ms':>9} {'calls':>9}  function")
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)  # type: ignore[attr-defined]
    for (filename, line, name), (_, calls, own, cumulative, _) in rows[:top]:
        where = f"{filename.rsplit('/site-packages/', 1)[-1].removeprefix(f'{ROOT}/')}:{line}"
        share = own / total * 100
        print(f"{share:>6.1f}% {own * 1000:>9.1f} {cumulative * 1000:>9.1f} {calls:>9}  {name} ({where})")


def bench_step(show_profile: bool) -> bool:
    graph = loop_graph()
    drive(graph, 300)  # warm-up: imports, caches, regex compilation
    gc.collect()
    samples, run = drive(graph, TRANSITIONS)
    us = [s * 1e6 for s in samples]
    median, p90 = statistics.median(us), percentile(us, 0.9)
    first, last = statistics.median(us[:WINDOW]), statistics.median(us[-WINDOW:])
    ok = median <= TARGET_STEP_US
    print(f"(a) step() on a {len(graph.nodes)}-node review loop, {TRANSITIONS:,} MissionFinished transitions")
    print(f"    {'':<34} {'median':>10} {'p90':>10}")
    print(f"    {'all transitions':<34} {median:>8.1f}us {p90:>8.1f}us")
    print(f"    {f'first {WINDOW}':<34} {first:>8.1f}us {percentile(us[:WINDOW], 0.9):>8.1f}us")
    print(f"    {f'last {WINDOW}':<34} {last:>8.1f}us {percentile(us[-WINDOW:], 0.9):>8.1f}us")
    print(f"    growth last/first: {last / first:.2f}x over {TRANSITIONS:,} transitions")
    print(
        f"    record at the end: {run.mission_count} missions ({len(run.missions)} summaries kept), "
        f"{len(run.context.results)} context results, {len(run.journal_json()):,} bytes of JSON"
    )
    for name, figure in REFERENCES_US:
        print(f"    reference (published, not measured): {name} ~{figure:.0f}us/step")
    print(
        f"    target: median <= {TARGET_STEP_US:.0f}us; measured {median:.1f}us = {median / TARGET_STEP_US:.2f}x "
        f"the target: {'OK' if ok else 'MISSED'}"
    )
    if show_profile:
        profile(f"{TRANSITIONS:,} transitions", lambda: drive(graph, TRANSITIONS))
    return ok


def bench_compaction(show_profile: bool) -> bool:
    print("\n(b) compact_context on fresh contexts (default tiers: 2 intact, 4 cut to 2,000 bytes, rest headers)")
    print(f"    {'size':>6} {'results':>8} {'bytes':>12} {'median':>10} {'per MB':>10}")
    per_mb: dict[int, float] = {}
    contexts: dict[int, Context] = {}
    for megabytes in SIZES_MB:
        context, count, total = context_of(megabytes)
        contexts[megabytes] = context
        compact_context(context)  # warm-up
        seconds = time_compaction(context, repeats=15)
        per_mb[megabytes] = seconds * 1000 / (total / 1_000_000)
        print(f"    {megabytes:>4}MB {count:>8,} {total:>12,} {seconds * 1000:>8.2f}ms {per_mb[megabytes]:>8.3f}ms")
    ten = per_mb[10] * 10
    spread = max(per_mb.values()) / min(per_mb.values())
    ok_time, ok_linear = ten < TARGET_COMPACT_10MB_MS, spread <= TARGET_LINEARITY
    print(f"    target: 10 MB in < {TARGET_COMPACT_10MB_MS:.0f}ms: {'OK' if ok_time else 'MISSED'}")
    print(f"    target: linear, worst/best ms per MB <= {TARGET_LINEARITY:.1f}x (here {spread:.2f}x): ", end="")
    print("OK" if ok_linear else "MISSED")
    if show_profile:
        profile("compacting 10 MB", lambda: compact_context(contexts[10]))
    return ok_time and ok_linear


def main(argv: list[str]) -> int:
    show_profile = "--profile" in argv
    ok_step = bench_step(show_profile)
    ok_compact = bench_compaction(show_profile)
    print(f"\nsummary: step {'OK' if ok_step else 'MISSED'}, compaction {'OK' if ok_compact else 'MISSED'}")
    return 0  # a benchmark reports; it does not fail a build


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
