"""``interlock verify``: replay a run's journal through the engine and name the first divergence (SPEC J6).

Why from the journal's files alone (the record, its events files, its mission records and graphs, all at one
commit) rather than from git's history: the same reads work on a local branch and through GitHub's API, and
a file edited in place on the branch is what the check is for. Each transition is checked in order: its
events file, the mission records it vouches for, the engine's replay of its event on the version before
(which must give the version whose hash it recorded), and, for the latest, the stored record's own bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.engine.errors import InterlockError, RunNotFound
from app.engine.graph import Graph
from app.engine.record import Run
from app.engine.rules import Rules, UnknownRules, replaying
from app.engine.step import step
from app.engine.validate import parse_graph
from app.inputfile import InputUnreadable, parse_json_text
from app.runner import chain
from app.store.journal import FileReader, event_path, events_folder, graph_path, pinned_graph_path, record_path


class Divergence(StrEnum):
    EDITED_RECORD = "edited record"
    MISSING_TRANSITION = "missing transition"
    EDITED_TRANSITION = "edited transition"
    MISSING_MISSION = "missing mission record"
    EDITED_MISSION = "edited mission record"
    EDITED_GRAPH = "edited graph"
    ENGINE_DRIFT = "engine drift"
    UNKNOWN_RULES = "unknown engine rules"


@dataclass(frozen=True)
class Found:
    kind: Divergence
    version: int
    path: str
    detail: str

    def line(self) -> str:
        return f"{self.kind.value} at version {self.version} ({self.path}): {self.detail}"


@dataclass(frozen=True)
class Verification:
    """``checked`` transitions verified, from version ``first`` to ``latest``; ``first`` is 0 when the record
    carries no hash chain at all (written before SPEC J6): nothing can be checked."""

    run_id: str
    latest: int
    first: int
    checked: int
    found: Found | None

    def summary(self) -> str:
        if self.found is not None:
            return f"run {self.run_id}: {self.found.line()}"
        if self.first == 0:
            return (
                f"verified 0 transitions: run {self.run_id} (version {self.latest}) was written before "
                "tamper evidence (SPEC J6); its next transition starts the chain"
            )
        since = "" if self.first == 1 else f" (versions before {self.first} predate tamper evidence: unchecked)"
        return f"verified {self.checked} transitions: run {self.run_id} versions {self.first}-{self.latest}{since}"


class Replay:
    """The state of one verification: the files read, the graphs by content hash."""

    def __init__(self, reader: FileReader, run_id: str) -> None:
        self.reader = reader
        self.run_id = run_id
        self.graphs: dict[str, Graph] = {}
        self.last: Rules | None = None  # the rules the transition before replayed under: tried first

    def graph(self, content_hash: str, version: int) -> Graph | Found:
        """The graph with ``content_hash``: one the run left by an upgrade (SPEC J7), else the stored graph."""
        if content_hash in self.graphs:
            return self.graphs[content_hash]
        for path in (pinned_graph_path(self.run_id, content_hash), graph_path(self.run_id)):
            data = self.reader.read(path)
            if data is None:
                continue
            try:
                graph = parse_graph(parse_json_text(path, data), source=path)
            except (InputUnreadable, InterlockError) as exc:
                return Found(Divergence.EDITED_GRAPH, version, path, str(exc))
            if graph.content_hash() == content_hash:
                self.graphs[content_hash] = graph
                return graph
        where = graph_path(self.run_id)
        return Found(Divergence.EDITED_GRAPH, version, where, f"no stored graph has the run's hash {content_hash}")

    def transition(self, version: int) -> chain.Transition | Found:
        path = event_path(self.run_id, version)
        data = self.reader.read(path)
        if data is None:
            return Found(Divergence.MISSING_TRANSITION, version, path, "the events file of this version is gone")
        try:
            found = chain.read_transition(data)
        except chain.TransitionUnreadable as exc:
            return Found(Divergence.EDITED_TRANSITION, version, path, f"not an events file ({exc})")
        if found.version != version:
            return Found(Divergence.EDITED_TRANSITION, version, path, f"it says version {found.version}")
        return found

    def missions(self, version: int, vouched: dict[str, str]) -> Found | None:
        for path, digest in sorted(vouched.items()):
            data = self.reader.read(path)
            if data is None:
                return Found(Divergence.MISSING_MISSION, version, path, "the mission record is gone")
            if chain.sha256(data) != digest:
                return Found(Divergence.EDITED_MISSION, version, path, "its hash is not the one recorded")
        return None

    def replay(self, before: Run | None, moved: chain.Transition) -> Run | Found:
        """Version ``moved.version`` as the engine makes it from the version before and the event, under the
        rules the transition recorded (for one that recorded none: the first of the older rules that gives the
        record it recorded, those of the transition before tried first)."""
        graph = self.graph(moved.graph, moved.version)
        if isinstance(graph, Found):
            return graph
        try:
            candidates = replaying(moved.rules)
        except UnknownRules as exc:
            path = event_path(self.run_id, moved.version)
            return Found(Divergence.UNKNOWN_RULES, moved.version, path, str(exc))
        if self.last in candidates:
            candidates = (self.last, *(rules for rules in candidates if rules != self.last))
        found: Found | None = None
        for rules in candidates:
            replayed = self.replay_under(before, moved, graph, rules)
            if not isinstance(replayed, Found):
                self.last = rules
                return replayed
            found = found or replayed  # the divergence under the likeliest rules is the one named
        assert found is not None  # ``replaying`` gives at least one rules version
        return found

    def replay_under(self, before: Run | None, moved: chain.Transition, graph: Graph, rules: Rules) -> Run | Found:
        try:
            run, _ = step(before, moved.event, graph, rules)
        except Exception as exc:  # an edited event may break the engine any way: a divergence, never a traceback
            return self.drift(moved, f"the engine refuses the event now: {exc}")
        sealed = chain.seal(run, before, moved.missions)
        if chain.record_hash(sealed) != moved.record:
            return self.drift(moved, "the engine gives a different record than the one recorded")
        if moved.routing != tuple(sealed.routed):  # the record vouches for its lines; the events file must agree
            path = event_path(self.run_id, moved.version)
            detail = "its routing lines are not the ones the transition added (SPEC C3)"
            return Found(Divergence.EDITED_TRANSITION, moved.version, path, detail)
        return sealed

    def drift(self, moved: chain.Transition, why: str) -> Found:
        what = type(moved.event).__name__
        detail = f"replaying {what} ({moved.event.key}) on the version before: {why} (engine drift, or an edited file)"
        return Found(Divergence.ENGINE_DRIFT, moved.version, event_path(self.run_id, moved.version), detail)


def checkable_from(reader: FileReader, run_id: str, latest: int) -> int:
    """The first version of the unbroken run of events files that ends at ``latest`` (0: none)."""
    names = {path.rsplit("/", 1)[-1] for path in reader.list_files(events_folder(run_id))}
    first = 0
    for version in range(latest, 0, -1):
        if event_path(run_id, version).rsplit("/", 1)[-1] not in names:
            break
        first = version
    return first


def verify(reader: FileReader, run_id: str) -> Verification:
    """Replay every transition the journal can vouch for and stop at the first divergence."""
    path = record_path(run_id)
    stored = reader.read(path)
    if stored is None:
        raise RunNotFound(run_id, "the journal")
    try:
        head = Run.from_journal(stored)
    except ValueError as exc:
        found = Found(Divergence.EDITED_RECORD, 0, path, f"not a run record ({str(exc).splitlines()[0]})")
        return Verification(run_id, 0, 0, 0, found)
    if head.id != run_id:  # another run's record put in its place: checking it would blame the other's files
        found = Found(Divergence.EDITED_RECORD, head.version, path, f"it is the record of run {head.id[:80]}")
        return Verification(run_id, head.version, 0, 0, found)
    first = checkable_from(reader, run_id, head.version)
    if head.chain is None:
        if first:  # events were written for it, so a record without a chain was edited
            found = Found(Divergence.EDITED_RECORD, head.version, path, "its hash chain was removed")
            return Verification(run_id, head.version, first, 0, found)
        return Verification(run_id, head.version, 0, 0, None)
    if first == 0:
        found = Found(Divergence.MISSING_TRANSITION, head.version, event_path(run_id, head.version), "it is gone")
        return Verification(run_id, head.version, 0, 0, found)
    return _replay_from(Replay(reader, run_id), head, chain.sha256(stored), first)


def _replay_from(replay: Replay, head: Run, stored_hash: str, first: int) -> Verification:
    before: Run | None = None
    for version in range(first, head.version + 1):
        moved = replay.transition(version)
        if isinstance(moved, Found):
            return Verification(head.id, head.version, first, version - first, moved)
        if version == first and first > 1:
            before = moved.anchor
            if before is None:  # the chain began before ``first``: the events file below it is gone
                gone = event_path(head.id, version - 1)
                found = Found(
                    Divergence.MISSING_TRANSITION, version - 1, gone, "the events file of this version is gone"
                )
                return Verification(head.id, head.version, first, 0, found)
        problem = replay.missions(version, moved.missions)
        if problem is None and version == head.version and stored_hash != moved.record:
            detail = "its hash is not the one its transition recorded (the file was edited)"
            problem = Found(Divergence.EDITED_RECORD, version, record_path(head.id), detail)
        if problem is not None:
            return Verification(head.id, head.version, first, version - first, problem)
        replayed = replay.replay(before, moved)
        if isinstance(replayed, Found):
            return Verification(head.id, head.version, first, version - first, replayed)
        before = replayed
    return Verification(head.id, head.version, first, head.version - first + 1, None)
