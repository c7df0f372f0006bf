"""Interlock's engine against Burr on the same 19-node review loop, in one process, alternating in rounds.

Run: ``pip install -e '.[bench]' && python -m tests.bench.bench_burr`` (prints a table; never a test, exits 0
whatever the figures). ``--persist`` adds a second comparison: each transition also saved, Burr's state by its
SQLite persister, Interlock's record as the journal file stores it (JSON) into SQLite the same way, one
committed row a transition. ``--rounds N`` changes the number of rounds (default 12).

The loop is ``bench_engine.loop_graph``: plan, 17 work stages, a review whose FAIL goes back to the first work
stage. Interlock: ``step(run, MissionFinished, graph)``, the answer parsed for its verdict, the result kept in
the tiered context, the mission charged to the ledger, the next mission dispatched, the event's key remembered.
Burr: an ``Application`` with one action a stage; each takes the agent's answer as its input, keeps it in the
state with its verdict, and the transitions route on the verdict (``when(verdict="FAIL")``, else the next
stage). Burr does less (no ledger, no context, no idempotency keys), so the comparison favours it.

Each round drives both systems for ``PER_ROUND`` transitions, one after the other, the order swapped every
round so that a machine that slows down meanwhile weighs on both alike. Every transition is timed alone; the
answer (and Interlock's event) is built outside the timing. The ratio is Burr's median over Interlock's, per
round; the table shows the median of the rounds and their range.
"""

from __future__ import annotations

import gc
import itertools
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from app.engine.events import MissionFinished, Start
from app.engine.graph.model import Graph
from app.engine.record import MissionStatus, Run
from app.engine.step import step
from tests.bench.bench_engine import T0, WORK_STAGES, answer_for, loop_graph

ROUNDS = 12
PER_ROUND = 1_000
PERSISTED_PER_ROUND = 200  # a committed SQLite write waits on the disk: fewer transitions, same alternation
WARM_UP = 300
STAGES = ["plan", *(f"w{i}" for i in range(1, WORK_STAGES + 1)), "review"]


class InterlockLoop:
    """The engine driven by MissionFinished events; ``save`` (optional) stores each new record."""

    def __init__(self, graph: Graph, save: Callable[[Run], None] | None = None) -> None:
        self.graph, self.save, self.index = graph, save, 0
        start = Start(key="start", at=T0, run_id="bench", title="Bench", body="Loop forever.")
        self.run, _ = step(None, start, graph)

    def timed(self, count: int) -> Iterator[float]:
        clock, graph, save = time.perf_counter, self.graph, self.save
        for _ in range(count):
            waiting = self.run.waiting
            assert waiting is not None, self.run.status
            self.index += 1
            event = MissionFinished(
                key=f"m{self.index}",
                at=T0 + timedelta(seconds=self.index),
                seq=waiting.seq,
                status=MissionStatus.DONE,
                answer=answer_for(waiting.stage, waiting.seq),
                commits=1,
            )
            started = clock()
            self.run, _ = step(self.run, event, graph)
            if save is not None:
                save(self.run)
            yield clock() - started


def burr_application(persister: Any = None) -> Any:
    """The same loop as a Burr application: one action a stage, transitions on the verdict."""
    from burr.core import ApplicationBuilder, State, default, when
    from burr.core.action import action

    @action(reads=[], writes=["answer", "verdict"])
    def stage(state: State, answer: str) -> State:
        verdict = answer.rsplit("VERDICT:", 1)[-1].strip()
        return state.update(answer=answer, verdict=verdict)

    actions = {name: stage for name in STAGES}
    work = STAGES[1:-1]
    transitions: list[tuple[Any, ...]] = list(itertools.pairwise(STAGES))
    transitions += [("review", work[0], when(verdict="FAIL")), ("review", "plan", default)]
    builder = (
        ApplicationBuilder()
        .with_actions(**actions)
        .with_transitions(*transitions)
        .with_state(answer="", verdict="")
        .with_entrypoint("plan")
        .with_identifiers(app_id="bench")
    )
    if persister is not None:
        builder = builder.with_state_persister(persister)
    return builder.build()


class BurrLoop:
    """Burr's application; the stage each step runs is known from the loop's order, so that asking Burr for its
    next action (which evaluates the transitions) stays inside the timed step, where Burr does it."""

    def __init__(self, persister: Any = None) -> None:
        self.app, self.seq = burr_application(persister), 0

    def stage(self) -> str:
        work = len(STAGES) - 2
        return STAGES[self.seq] if self.seq < len(STAGES) else STAGES[1 + (self.seq - len(STAGES)) % (work + 1)]

    def timed(self, count: int) -> Iterator[float]:
        clock, app = time.perf_counter, self.app
        for _ in range(count):
            stage = self.stage()
            answer = answer_for(stage, self.seq + 1)
            self.seq += 1
            started = clock()
            ran, _, _ = app.step(inputs={"answer": answer})
            elapsed = clock() - started
            assert ran.name == stage, (ran.name, stage)
            yield elapsed


def sqlite_saver(path: Path) -> Callable[[Run], None]:
    """Interlock's record saved as Burr's persister saves its state: one row a transition, committed."""
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE runs (id TEXT, version INTEGER, record BLOB, PRIMARY KEY (id, version))")

    def save(run: Run) -> None:
        connection.execute("INSERT INTO runs VALUES (?, ?, ?)", (run.id, run.version, run.journal_json()))
        connection.commit()

    return save


def burr_sqlite(path: Path) -> Any:
    from burr.core.persistence import SQLLitePersister

    persister = SQLLitePersister(db_path=str(path), table_name="burr_state")
    persister.initialize()
    return persister


def compare(label: str, ours: Any, theirs: Any, rounds: int = ROUNDS, per_round: int = PER_ROUND) -> None:
    """Alternate the two loops in rounds and print medians, per-round ranges and the ratio."""
    list(ours.timed(WARM_UP))
    list(theirs.timed(WARM_UP))
    mine: list[float] = []
    peer: list[float] = []
    ratios: list[float] = []
    for index in range(rounds):
        gc.collect()
        pair = (ours, theirs) if index % 2 == 0 else (theirs, ours)
        samples = {id(loop): [s * 1e6 for s in loop.timed(per_round)] for loop in pair}
        a, b = statistics.median(samples[id(ours)]), statistics.median(samples[id(theirs)])
        mine.append(a)
        peer.append(b)
        ratios.append(b / a)
    print(f"\n{label}: {rounds} rounds of {per_round:,} transitions each, alternating (order swapped every round)")
    print(f"    {'':<28} {'median':>10} {'round medians':>20}")
    print(f"    {'Interlock step':<28} {statistics.median(mine):>8.1f}us {min(mine):>9.1f}-{max(mine):.1f}us")
    print(f"    {'Burr Application.step':<28} {statistics.median(peer):>8.1f}us {min(peer):>9.1f}-{max(peer):.1f}us")
    verdict = "Interlock faster" if statistics.median(ratios) > 1 else "Burr faster"
    print(
        f"    Burr / Interlock: {statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}x): "
        f"{verdict}; Interlock faster in {sum(r > 1 for r in ratios)} of {rounds} rounds"
    )


def main(argv: list[str]) -> int:
    import burr

    version = getattr(burr, "__version__", None) or _version("burr")
    load = os.getloadavg()
    print(f"Burr {version}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else ROUNDS
    graph = loop_graph()
    compare(f"(a) in memory, {len(graph.nodes)}-node review loop", InterlockLoop(graph), BurrLoop(), rounds)
    if "--persist" in argv:
        folder = Path(tempfile.mkdtemp(prefix="bench-burr-"))
        ours = InterlockLoop(graph, sqlite_saver(folder / "interlock.sqlite"))
        theirs = BurrLoop(burr_sqlite(folder / "burr.sqlite"))
        compare("(b) each transition saved to SQLite", ours, theirs, rounds, PERSISTED_PER_ROUND)
    return 0


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
