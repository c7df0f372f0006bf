"""Interlock against LangGraph on the same 19-node review loop with a no-op agent.

Run: ``pip install -e '.[bench]' && python -m tests.bench.bench_langgraph`` (prints a table, never a test).

- in process: Interlock's ``step`` plus an in-memory journal against LangGraph with its in-memory saver.
  Interlock's records are immutable, so its in-memory journal keeps every version as it is; a second row
  also encodes every version as JSON, as the git journal does;
- durable: Interlock's git state branch (one commit per transition, mission records beside it) against
  LangGraph's SQLite saver;
- journal bytes after 200 transitions, and after 400 to show how each grows. Interlock's journal is
  measured as git stores it after ``git gc`` (which the store runs by itself with ``git gc --auto``),
  with the loose objects written before that shown beside it.

Targets: in process at least 5x faster than LangGraph; durable within 3x of its SQLite saver; journal
growth linear in the number of missions.
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

from app.engine import events as ev
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus
from app.engine.step import step
from app.store.gitstore import GitStore
from app.store.journal import encode_json, mission_path
from app.store.memory import MemoryStore

WORKERS = [f"w{i:02d}" for i in range(1, 18)]
STAGES = ["plan", *WORKERS, "review"]
ANSWER = "No-op agent: nothing to change. " * 6  # ~200 bytes, as a terse agent would answer
T0 = datetime(2026, 1, 1, tzinfo=UTC)
REPEATS = 5
DURABLE_REPEATS = 7


def interlock_graph() -> Graph:
    nodes = [{"stage": s, "capability": "review" if s == "review" else "coding", "maxVisits": 10_000} for s in STAGES]
    chain = ["plan", *WORKERS, "review"]
    edges = [{"from": a, "verdict": "PASS", "to": b} for a, b in itertools.pairwise(chain)]
    edges += [
        {"from": "review", "verdict": "FAIL", "to": "w01"},
        {"from": "review", "verdict": "DONE", "to": "__end__"},
    ]
    return parse_graph({"name": "bench-19", "entry": "plan", "nodes": nodes, "edges": edges})


def interlock_run(transitions: int, store: Any) -> float:
    """Seconds for ``transitions`` mission transitions, each journaled in ``store``."""
    graph = interlock_graph()
    run, _ = step(None, ev.Start(key="start", at=T0, run_id="bench", title="bench"), graph)
    store.save(run, None)
    started = time.perf_counter()
    for index in range(transitions):
        waiting = run.waiting
        assert waiting is not None
        answer = f"{ANSWER}\nVERDICT: FAIL" if waiting.stage == "review" else ANSWER
        event = ev.MissionFinished(
            key=f"m{index}",
            at=T0 + timedelta(seconds=index + 1),
            seq=waiting.seq,
            status=MissionStatus.DONE,
            answer=answer,
            commits=1,
        )
        new, _ = step(run, event, graph)
        record = {"seq": waiting.seq, "stage": waiting.stage, "answer": answer}
        store.save(new, run.version, {mission_path(run.id, waiting.seq, waiting.stage): encode_json(record)})
        run = new
    elapsed = time.perf_counter() - started
    if isinstance(store, GitStore):
        store.close()  # a pack merge still running beside the saves: finished before anyone reads the repository
    return elapsed


class LoopState(TypedDict):
    results: Annotated[list[str], operator.add]
    loops: int


def langgraph_app(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    builder: Any = StateGraph(LoopState)

    def worker(state: LoopState) -> dict[str, Any]:
        return {"results": [ANSWER]}

    def review(state: LoopState) -> dict[str, Any]:
        return {"results": [f"{ANSWER}\nVERDICT: FAIL"], "loops": state["loops"] + 1}

    for stage in STAGES:
        builder.add_node(stage, review if stage == "review" else worker)
    builder.add_edge(START, "plan")
    chain = ["plan", *WORKERS, "review"]
    for a, b in itertools.pairwise(chain):
        builder.add_edge(a, b)
    builder.add_conditional_edges("review", lambda s: END if s["loops"] >= s.get("max_loops", 10**9) else "w01")
    return builder.compile(checkpointer=checkpointer)


def langgraph_run(transitions: int, checkpointer: Any) -> float:
    app = langgraph_app(checkpointer)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": transitions + 1}
    started = time.perf_counter()
    try:
        app.invoke({"results": [], "loops": 0}, config)
    except Exception as exc:  # GraphRecursionError: the loop was stopped after exactly `transitions` steps
        if "Recursion limit" not in str(exc):
            raise
    return time.perf_counter() - started


def git_repo() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bench-git-"))
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def objects_bytes(repo: Path) -> int:
    return sum(path.stat().st_size for path in (repo / ".git" / "objects").rglob("*") if path.is_file())


def sqlite_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def file_create_ms(count: int = 100) -> float:
    """This disk's time to create a small file and rename it into place: what a durable save waits on."""
    folder = Path(tempfile.mkdtemp(prefix="bench-disk-"))
    started = time.perf_counter()
    for index in range(count):
        path = folder / f"tmp{index}"
        path.write_bytes(b"x" * 300)
        path.replace(folder / f"file{index}")
    return (time.perf_counter() - started) / count * 1000


def median_per_step(runner: Any, transitions: int) -> float:
    return statistics.median(runner() for _ in range(REPEATS)) / transitions


def measure(transitions: int = 200) -> dict[str, float]:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    figures: dict[str, float] = {}
    figures["ours_mem"] = median_per_step(lambda: interlock_run(transitions, MemoryStore(serialize=False)), transitions)
    figures["ours_json"] = median_per_step(lambda: interlock_run(transitions, MemoryStore()), transitions)
    figures["lg_mem"] = median_per_step(lambda: langgraph_run(transitions, InMemorySaver()), transitions)

    def sqlite_once(steps: int) -> tuple[float, int]:
        path = Path(tempfile.mkdtemp(prefix="bench-sqlite-")) / "lg.sqlite"
        with sqlite3.connect(path, check_same_thread=False) as conn:
            seconds = langgraph_run(steps, SqliteSaver(conn))
        return seconds, sqlite_bytes(path)

    # Durable: the two alternate, run by run, so that a disk that slows down meanwhile weighs on both alike;
    # the ratio is the median of the runs' ratios.
    ours, theirs, creates = [], [], []
    for _ in range(DURABLE_REPEATS):
        creates.append(file_create_ms())
        ours.append(interlock_run(transitions, GitStore(git_repo())) / transitions)
        theirs.append(sqlite_once(transitions)[0] / transitions)
    figures["ours_git"], figures["lg_sqlite"] = statistics.median(ours), statistics.median(theirs)
    figures["git_ratio"] = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    figures["create_ms_low"], figures["create_ms_high"] = min(creates), max(creates)
    for steps in (200, 400):
        repo = git_repo()
        before = objects_bytes(repo)
        interlock_run(steps, GitStore(repo))
        figures[f"ours_loose_{steps}"] = objects_bytes(repo) - before
        subprocess.run(["git", "-C", str(repo), "gc", "--quiet"], check=True)
        figures[f"ours_bytes_{steps}"] = objects_bytes(repo) - before
        figures[f"lg_bytes_{steps}"] = sqlite_once(steps)[1]
    return figures


def main() -> int:
    f = measure()
    us = 1e6
    print(f"{'measure':<44} {'Interlock':>12} {'LangGraph':>12} {'ratio':>8}  target")
    rows = [
        (
            "per transition, in process (us)",
            f["ours_mem"] * us,
            f["lg_mem"] * us,
            f["lg_mem"] / f["ours_mem"],
            ">= 5x faster",
            f["lg_mem"] / f["ours_mem"] >= 5,
        ),
        (
            "  same, every version also encoded as JSON",
            f["ours_json"] * us,
            f["lg_mem"] * us,
            f["lg_mem"] / f["ours_json"],
            ">= 5x faster",
            f["lg_mem"] / f["ours_json"] >= 5,
        ),
        (
            "per transition, durable (us)",
            f["ours_git"] * us,
            f["lg_sqlite"] * us,
            f["git_ratio"],
            "<= 3x slower",
            f["git_ratio"] <= 3,
        ),
    ]
    for name, ours, theirs, ratio, target, ok in rows:
        print(f"{name:<44} {ours:>12.1f} {theirs:>12.1f} {ratio:>7.2f}x  {target}: {'OK' if ok else 'MISSED'}")
    for steps in (200, 400):
        print(
            f"{f'journal bytes after {steps} transitions':<44} {f[f'ours_bytes_{steps}']:>12,.0f} "
            f"{f[f'lg_bytes_{steps}']:>12,.0f} {f[f'lg_bytes_{steps}'] / f[f'ours_bytes_{steps}']:>7.1f}x smaller"
            f"  (before git gc: {f[f'ours_loose_{steps}']:,.0f})"
        )
    print(
        f"durable: ratio is the median of {DURABLE_REPEATS} alternating runs' ratios; creating a file took "
        f"{f['create_ms_low']:.2f}-{f['create_ms_high']:.2f} ms on this disk meanwhile (a save creates 3)"
    )
    ours_growth = f["ours_bytes_400"] / f["ours_bytes_200"]
    theirs_growth = f["lg_bytes_400"] / f["lg_bytes_200"]
    print(
        f"{'growth from 200 to 400 transitions':<44} {ours_growth:>11.2f}x {theirs_growth:>11.2f}x"
        f"           linear is 2.00x: {'OK' if ours_growth <= 2.3 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
