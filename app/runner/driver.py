"""The run driver: how every shell starts a run and applies an event to it, over any journal store.

Why it exists: each shell used to write this itself — the GitHub shell and the local shell each had their own
start, their own compare-and-swap loop (with different numbers of tries), their own path and reader for the
stored graph and their own idea of the files saved with a transition. What a transition does to the journal
must not depend on the shell, so it is written once, here; a shell keeps only how it executes effects (on
GitHub, or in this process) and how events reach it (webhooks, the command line).

The one retry policy (SPEC J2): load the record, ``step``, save with compare-and-swap on the version read;
on a conflict, re-read and re-apply, at once, up to ``MAX_TRIES`` times. Each conflict means another writer
saved, so the runs as a whole always move on; giving up after that many losses in a row says something is
wrong rather than busy. Anything a shell must hold across the retries (the local run's lock) it takes around
``apply``: the driver never lets go of it in between.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from app.agents.prices import ModelPrice
from app.engine.decisions import newest_decided, outcome_section
from app.engine.effects import AskAdvisor, AskDecision, DispatchMission, Effect, Escalate, MessageKind, PostMessage
from app.engine.errors import GraphInvalid, InterlockError, VersionConflict
from app.engine.events import Event, GraphMismatched, GraphUpgraded, Start
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import Run
from app.engine.step import step
from app.engine.team import Team
from app.inputfile import InputUnreadable, parse_json_text
from app.runner import chain, observe
from app.runner.orders import mission_order, role_for
from app.store.journal import RunStore, decision_path, encode_json, graph_path, order_path, pinned_graph_path

MAX_TRIES = 20  # compare-and-swap tries of one event, in every shell
GRAPH_CACHE: dict[str, Graph] = {}  # content hash -> graph: a run's stored graph never changes
GRAPH_CACHE_SIZE = 256
HASHES: dict[int, tuple[Graph, str]] = {}  # id -> (graph, its content hash); the graph kept so the id stays its own


class StoredGraphUnreadable(InterlockError):
    """The graph stored with a run is missing or is not JSON (the state branch was rewritten): the run's events
    are refused, nothing changed, and a shell says which file to restore."""

    def __init__(self, run_id: str, path: str, message: str) -> None:
        self.run_id = run_id
        self.path = path
        super().__init__(message)


def commit_message(run: Run, event: Event) -> str:
    """The journal's commit of a transition: what the run became, and which event made it, by whom (a person's
    command names the person, from any shell or the board), so that ``git log`` of the journal says who did what."""
    by = f" by {event.by}" if event.by else ""
    return (
        f"interlock: run {run.id} v{run.version} {run.status.value} at {run.stage}\n\n"
        f"{type(event).__name__}{by} ({event.key})"
    )


def pinned(run: Run, graph: Graph, event: Event) -> Event:
    """``event``, or the stop of a run whose graph is no longer the one it is pinned to (SPEC J7): checked at every
    load, whatever graph a shell passes; only an explicit upgrade applies with another graph."""
    found = content_hash(graph)
    if found == run.graph_hash or isinstance(event, GraphUpgraded):
        return event
    return GraphMismatched(key=f"graph-mismatch/{run.version}", at=event.at, found=found)


def content_hash(graph: Graph) -> str:
    """The graph's content hash, computed once per graph object (a transition must not re-serialise it)."""
    known = HASHES.get(id(graph))
    if known is not None and known[0] is graph:
        return known[1]
    HASHES[id(graph)] = (graph, graph.content_hash())
    while len(HASHES) > GRAPH_CACHE_SIZE:
        HASHES.pop(next(iter(HASHES)))
    return HASHES[id(graph)][1]


def same_event(event: Event) -> Callable[[Run], Event]:
    """For ``apply``: an event made once, that every retry re-applies as it is (never re-keyed from the
    version a retry reads, so that a duplicate is recognised as one)."""
    return lambda _run: event


@dataclass(frozen=True)
class OrderTerms:
    """What a job's mission order names besides the effect: the advisor who answers an advisor's order, the
    repository's `prices:` that the job's HTTP agents estimate their cost with, and the team whose roles do
    the missions (their agent, model and tools go into each order; ``None``: the job's default agent). The
    team may be given as a function of the run, for a repository whose runs belong to different teams."""

    advisor: str | None = None
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    team: Team | Callable[[Run], Team | None] | None = None

    def team_of(self, run: Run) -> Team | None:
        return self.team(run) if callable(self.team) else self.team


@dataclass(frozen=True)
class Applied:
    """A transition as saved: the run after it, its graph, its effects, and whether it was new (``False``:
    the event was applied before, nothing was saved and there are no effects)."""

    run: Run
    graph: Graph
    effects: list[Effect]
    new: bool
    key: str = ""  # the event's key: for one applied before, what a shell reconciles from


class RunDriver:
    """Starts runs and applies events over ``store``. ``orders`` gives the terms of the mission orders saved
    with a transition that dispatches a job (the GitHub shell's jobs read them); ``None``: no orders are
    saved, since a shell that runs its missions in-process hands each its prompt directly."""

    def __init__(
        self,
        store: RunStore,
        orders: Callable[[], OrderTerms] | None = None,
        tries: int = MAX_TRIES,
        owed: Callable[[Run, list[Effect]], list[dict[str, str]]] | None = None,
    ) -> None:
        self.store = store
        self.orders = orders
        self.tries = tries
        self.owed = owed  # what a transition's events file keeps of the comments it owes (the GitHub shell's)

    def start(self, event: Start, graph: Graph) -> Applied:
        """The run's first record, saved with the graph it runs on and the files of its first transition."""
        started = time.time()
        run, effects = step(None, event, graph)
        run, sealed = self.sealed(run, None, event, {}, self._owed(run, effects))
        files = {graph_path(run.id): encode_json(graph.to_json()), **self.transition_files(run, effects), **sealed}
        self.store.save(run, None, files, message=f"interlock: start run {run.id} on {graph.name}")
        observe.saved(None, event, run, started)  # metrics and traces (SPEC W6)
        return Applied(run, graph, effects, True)

    def apply(
        self,
        run_id: str,
        make: Callable[[Run], Event],
        graph: Graph | None = None,
        files: dict[str, bytes] | None = None,
        load: Callable[[str], Run] | None = None,
    ) -> Applied:
        """The event ``make`` builds from the current record, applied with compare-and-swap and saved with
        ``files`` and the transition's own files. ``load`` reads the record (by default ``store.load``; the
        GitHub shell reads files the event needs in the same call); ``graph`` defaults to the stored one."""
        read, started = load or self.store.load, time.time()
        for _ in range(self.tries):
            current = read(run_id)
            graph = graph or self.graph_of(current)
            event = pinned(current, graph, make(current))
            run, effects = step(current, event, graph)
            if run is current:
                return Applied(run, graph, [], False, event.key)
            try:
                run, sealed = self.sealed(run, current, event, files or {}, self._owed(run, effects))
                changes = {**(files or {}), **self.transition_files(run, effects), **sealed}
                self.store.save(run, current.version, changes, message=commit_message(run, event))
            except VersionConflict:
                continue
            observe.saved(current, event, run, started)  # metrics and traces (SPEC W6)
            return Applied(run, graph, effects, True)
        raise InterlockError(f"run {run_id}: gave up after {self.tries} conflicting writes")

    def sealed(
        self, run: Run, current: Run | None, event: Event, files: dict[str, bytes], owed: list[dict[str, str]]
    ) -> tuple[Run, dict[str, bytes]]:
        """``run`` with its hash chain, and the transition's events file (SPEC J6, ``app/runner/chain.py``) with
        the comments the transition owes, as the shell's ``owed`` says them (``app/webhooks/outbox.py``)."""
        new = chain.new_mission_hashes(run, current, files, self.store.read)
        run = chain.seal(run, current, new)
        return run, chain.event_file(run, event, current, new, owed)

    def _owed(self, run: Run, effects: list[Effect]) -> list[dict[str, str]]:
        return self.owed(run, effects) if self.owed is not None else []

    def graph_of(self, run: Run) -> Graph:
        """The graph stored with the run at its start; cached by content hash, since it never changes."""
        cached = GRAPH_CACHE.get(run.graph_hash)
        if cached is not None:
            return cached
        path = graph_path(run.id)
        data = self.store.read(path)
        if data is None:
            raise StoredGraphUnreadable(run.id, path, f"run {run.id} has no stored graph ({path})")
        try:  # the journal is a branch anyone with push access can rewrite: read it like any input (issue 11)
            stored = parse_json_text(path, data)
        except InputUnreadable as exc:
            raise StoredGraphUnreadable(
                run.id, path, f"the stored graph of run {run.id} cannot be read: {exc}"
            ) from None
        graph = parse_graph(stored, source=path)  # GraphInvalid (naming the path) when it is JSON but no graph
        if graph.content_hash() != run.graph_hash:  # rewritten since the start: this run's, never another's
            return graph
        GRAPH_CACHE[run.graph_hash] = graph
        while len(GRAPH_CACHE) > GRAPH_CACHE_SIZE:
            GRAPH_CACHE.pop(next(iter(GRAPH_CACHE)))
        return graph

    def upgrade_files(self, run: Run, graph: Graph) -> dict[str, bytes]:
        """The files a move to ``graph`` saves (SPEC J7): the new version where the run's graph is stored, and the
        version it leaves kept by its hash when still genuine, so ``interlock verify`` can replay the versions
        before (else there is nothing to keep: ``verify`` says those were on a graph that is gone)."""
        files = {graph_path(run.id): encode_json(graph.to_json())}
        try:
            stored = self.graph_of(run)
        except (StoredGraphUnreadable, GraphInvalid):
            return files
        if stored.content_hash() == run.graph_hash:
            files[pinned_graph_path(run.id, run.graph_hash)] = encode_json(stored.to_json())
        return files

    def _decided_file(self, run: Run, effects: list[Effect]) -> dict[str, bytes]:
        """The decision file with its outcome appended, when a person's command just decided it (SPEC E3): who
        chose which option and when, beside the options and the recommendation they chose from."""
        decided = newest_decided(run)
        said = any(isinstance(e, PostMessage) and e.kind is MessageKind.DECIDED for e in effects)
        if decided is None or not said:
            return {}
        path = decision_path(run.id)  # written by the stop that opened the decision: its file, whatever it quotes
        stored = (self.store.read(path) or b"").decode("utf-8", errors="replace")
        return {path: (stored.rstrip("\n") + "\n" + outcome_section(decided)).encode("utf-8")}

    def transition_files(self, run: Run, effects: list[Effect]) -> dict[str, bytes]:
        """The files saved with a transition: the decision file of an escalation (or, with its outcome, of the
        decision a person's command just made), and (with ``orders``) the order of each mission or call it
        dispatches, read by the job (``app/runner/job.py``)."""
        files = {decision_path(run.id): e.decision.encode("utf-8") for e in effects if isinstance(e, Escalate)}
        files.update(self._decided_file(run, effects))
        if self.orders is None:
            return files
        terms: OrderTerms | None = None
        for effect in effects:
            if isinstance(effect, DispatchMission | AskDecision | AskAdvisor):
                terms = terms or self.orders()  # asked only when a job is dispatched
                agent = terms.advisor if isinstance(effect, AskAdvisor) else None
                role = role_for(terms.team_of(run), effect.capability) if isinstance(effect, DispatchMission) else None
                files[order_path(run.id, effect.seq, effect.stage)] = encode_json(
                    mission_order(effect, agent, terms.prices, role)
                )
        return files
