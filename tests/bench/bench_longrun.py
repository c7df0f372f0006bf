"""A long run: the durable local transition at 200 and at 3,000 missions, against LangGraph's SQLite saver.

Run: ``pip install -e '.[bench]' && python -m tests.bench.bench_longrun [repeats]`` (prints a table, never a test).

Both systems run the 19-node review loop of ``bench_langgraph`` with a no-op agent, durably: Interlock as the
local shell saves a transition (``RunDriver.apply`` on the git state branch: the record with its hash chain, the
events file and the mission record), LangGraph with its SQLite saver. They alternate in rounds of
``ROUND`` transitions, each picking up where its last round stopped, so that a machine that slows down weighs on
both alike; a round's figure is its time divided by its transitions. "At 200" is the round from 200 to 400, "at
3,000" the one from 3,000 to 3,200.

Interlock runs twice, in journal layout v2 (buckets of 100: ``app/store/layout.py``, what a new run is written
in) and in layout v1 (flat folders, as before issue 27), in the same alternating rounds.

Targets (issue 27 part 4): Interlock (v2) at 3,000 within 1.3x of Interlock at 200, and no slower than LangGraph
at 3,000.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from app.engine import events as ev
from app.engine.record import MissionStatus, Run
from app.runner.driver import RunDriver
from app.store.gitstore import GitStore
from app.store.journal import encode_json, mission_path, record_path
from app.store.layout import V1, V2
from tests.bench.bench_langgraph import ANSWER, T0, git_repo, interlock_graph, langgraph_app

ROUND = 200
EARLY, LATE = 200, 3000  # the rounds compared: starting at these transitions
MISSIONS = LATE + ROUND


class InterlockRun:
    """One run on a git state branch, advanced a round at a time through the run driver, as the local shell does."""

    def __init__(self, layout: int = V2) -> None:
        self.store = GitStore(git_repo(), layout=layout)
        self.driver = RunDriver(self.store)
        self.graph = interlock_graph()
        self.run = self.driver.start(ev.Start(key="start", at=T0, run_id="bench", title="bench"), self.graph).run
        self.done = 0

    def advance(self, transitions: int) -> float:
        """Seconds per transition of a round of ``transitions``."""
        started = time.perf_counter()
        for _ in range(transitions):
            self.run = self._transition(self.run)
        return (time.perf_counter() - started) / transitions

    def _transition(self, run: Run) -> Run:
        waiting = run.waiting
        assert waiting is not None
        answer = f"{ANSWER}\nVERDICT: FAIL" if waiting.stage == "review" else ANSWER
        self.done += 1
        event = ev.MissionFinished(
            key=f"m{self.done}",
            at=T0 + timedelta(seconds=self.done),
            seq=waiting.seq,
            status=MissionStatus.DONE,
            answer=answer,
            commits=1,
        )
        record = {"seq": waiting.seq, "stage": waiting.stage, "answer": answer}
        files = {mission_path(run.id, waiting.seq, waiting.stage): encode_json(record)}
        return self.driver.apply(run.id, lambda _current: event, self.graph, files).run

    def record_bytes(self) -> int:
        return len(self.store.read(record_path(self.run.id)) or b"")


class LangGraphRun:
    """The same loop on LangGraph's SQLite saver, resumed from its last checkpoint for each round."""

    def __init__(self) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.path = Path(tempfile.mkdtemp(prefix="bench-sqlite-")) / "lg.sqlite"
        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.app = langgraph_app(SqliteSaver(self.conn))
        self.first = True

    def advance(self, transitions: int) -> float:
        """Seconds per step of a round of about ``transitions`` steps (a resumed round may run one or two more)."""
        config = {"configurable": {"thread_id": "bench"}, "recursion_limit": transitions}
        before = 0 if self.first else self.steps()
        started = time.perf_counter()
        try:
            self.app.invoke({"results": [], "loops": 0} if self.first else None, config)
        except Exception as exc:  # GraphRecursionError: stopped after the limit's steps, each checkpointed
            if "Recursion limit" not in str(exc):
                raise
        elapsed = time.perf_counter() - started
        self.first = False
        return elapsed / (self.steps() - before)

    def steps(self) -> int:
        return len(self.app.get_state({"configurable": {"thread_id": "bench"}}).values["results"])


def one_repeat() -> dict[str, float]:
    """Per-transition seconds of each system at the two rounds compared, advanced alternately to ``MISSIONS``."""
    ours, flat, theirs = InterlockRun(V2), InterlockRun(V1), LangGraphRun()
    systems: list[tuple[str, InterlockRun | LangGraphRun]] = [("ours", ours), ("v1", flat), ("lg", theirs)]
    figures: dict[str, float] = {}
    for index, start in enumerate(range(0, MISSIONS, ROUND)):
        order = systems[index % 3 :] + systems[: index % 3]  # each goes first in turn
        for name, system in order:
            per_step = system.advance(ROUND)
            if start in (EARLY, LATE):
                figures[f"{name}_{start}"] = per_step
        if start == EARLY:
            figures["record_early"] = ours.record_bytes()
    ours.store.close()
    flat.store.close()
    assert theirs.steps() >= MISSIONS, f"LangGraph ran {theirs.steps()} steps, not {MISSIONS}"
    figures["record_late"] = ours.record_bytes()
    theirs.conn.close()
    return figures


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    load = os.getloadavg()[0]
    results = [one_repeat() for _ in range(repeats)]
    load = max(load, os.getloadavg()[0])
    ms = 1000.0

    def spread(key: str, scale: float = ms) -> str:
        values = sorted(r[key] * scale for r in results)
        return f"{values[0]:.2f}-{values[-1]:.2f}" if len(values) > 1 else f"{values[0]:.2f}"

    def ratios(top: str, bottom: str) -> list[float]:
        return sorted(r[top] / r[bottom] for r in results)

    print(f"{'per durable transition (ms)':<40} {'at 200':>12} {'at 3,000':>12}  3,000 / 200")
    labels = (("ours", "Interlock, journal layout v2"), ("v1", "Interlock, journal layout v1"), ("lg", "LangGraph"))
    for name, label in labels:
        growth = ", ".join(f"{value:.2f}x" for value in ratios(f"{name}_{LATE}", f"{name}_{EARLY}"))
        print(f"{label:<40} {spread(f'{name}_{EARLY}'):>12} {spread(f'{name}_{LATE}'):>12}  {growth}")
    flat = ratios(f"ours_{LATE}", f"ours_{EARLY}")
    versus = ratios(f"ours_{LATE}", f"lg_{LATE}")
    print(
        f"Interlock (v2) 3,000 / 200: {', '.join(f'{v:.2f}x' for v in flat)} (median {flat[len(flat) // 2]:.2f}x)"
        f"  target <= 1.3x: {'OK' if max(flat) <= 1.3 else f'MISSED in {sum(v > 1.3 for v in flat)} of {len(flat)}'}"
    )
    print(
        f"Interlock (v2) / LangGraph at 3,000: {', '.join(f'{v:.2f}x' for v in versus)}  target <= 1.0x: "
        f"{'OK' if max(versus) <= 1.0 else 'MISSED'}"
    )
    early = ", ".join(f"{v:.2f}x" for v in ratios(f"ours_{EARLY}", f"lg_{EARLY}"))
    print(f"Interlock / LangGraph at 200: {early}")
    print(
        f"Interlock's record: {spread('record_early', 1 / 1024)} KB at 200, {spread('record_late', 1 / 1024)} KB "
        f"at {MISSIONS:,}"
    )
    print(f"{repeats} repeats, rounds of {ROUND} alternating; load average {load:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
