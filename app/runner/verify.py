"""``interlock verify``: replay a run's journal through the engine and name the first divergence (SPEC J6).

Why from the journal's files alone (the record, its events files, its mission records and graphs, all at one
commit) rather than from git's history: the same reads work on a local branch and through GitHub's API, and
a file edited in place on the branch is what the check is for. Each transition is checked in order: its
events file, the mission records it vouches for, the engine's replay of its event on the version before
(which must give the version whose hash it recorded), and, for the latest, the stored record's own bytes.

A journal consistent in itself may still have been stripped (every chain and events file removed) or rolled back
(the branch reset, the last transition's files removed): the caller passes the anchors of the chain's head read
where the state branch cannot rewrite them (``app/engine/anchor.py``), and the journal must reach each one with
the same hash. An anchor older than the journal's head only lags (it is written after the save): no alarm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine.anchor import Witness
from app.engine.errors import InterlockError, RunNotFound
from app.engine.graph.cost_bound import counted
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import Run
from app.engine.rules import Rules, UnknownRules, replaying
from app.engine.step import step
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
    STRIPPED = "stripped journal"  # no transitions to check, where an anchor says there were
    ROLLED_BACK = "rolled back"  # the journal ends before the version an anchor names
    REWRITTEN = "rewritten journal"  # the journal's hash at an anchored version is not the anchored one
    UNANCHORED = "no anchor"  # on GitHub, where the App anchors every run made since rules 5, none was found


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
    anchors: tuple[str, ...] = ()  # the anchors the journal agrees with, each "where (version N)"

    def summary(self) -> str:
        if self.found is not None:
            return f"run {self.run_id}: {self.found.line()}"
        agree = (
            f"; {' and '.join(self.anchors)} {'agree' if len(self.anchors) > 1 else 'agrees'}" if self.anchors else ""
        )
        if self.first == 0:
            return (
                f"verified 0 transitions: run {self.run_id} (version {self.latest}) was written before "
                f"tamper evidence (SPEC J6); its next transition starts the chain{agree}"
            )
        since = "" if self.first == 1 else f" (versions before {self.first} predate tamper evidence: unchecked)"
        checked = f"verified {self.checked} transitions: run {self.run_id} versions {self.first}-{self.latest}"
        return f"{checked}{since}{agree}"


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


ANCHORED_SINCE = 5  # the engine rules of the first records the App anchored on GitHub (issue 28)


def verify(reader: FileReader, run_id: str, witnesses: Sequence[Witness] = (), expected: bool = False) -> Verification:
    """Replay every transition the journal can vouch for and stop at the first divergence; then hold the journal
    against the ``witnesses`` of its head (SPEC J6). ``expected``: the shell writes an anchor for every record made
    under rules ``ANCHORED_SINCE`` or later (on GitHub), so finding none for such a record fails: the check run
    and the status comment were removed, and a rollback could not be seen."""
    result = _verify(reader, run_id, witnesses)
    if result.found is not None or witnesses or not expected:
        return result
    head = Run.from_journal(reader.read(record_path(run_id)) or b"")
    if head.rules < ANCHORED_SINCE:
        return result
    detail = (
        f"the run was made under engine rules {head.rules}, whose every transition is anchored on its check run and "
        "status comment, but neither carries an anchor (deleted?): a rollback cannot be ruled out"
    )
    return replace(result, found=Found(Divergence.UNANCHORED, head.version, record_path(run_id), detail))


def _verify(reader: FileReader, run_id: str, witnesses: Sequence[Witness]) -> Verification:
    path = record_path(run_id)
    stored = reader.read(path)
    if stored is None:
        if witnesses:  # the record itself removed: the strongest strip of all
            return Verification(run_id, 0, 0, 0, stripped(run_id, witnesses[0], "the run's record is gone"))
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
        return _unchained(head, first, chain.sha256(stored), witnesses)
    if first == 0:
        found = Found(Divergence.MISSING_TRANSITION, head.version, event_path(run_id, head.version), "it is gone")
        return Verification(run_id, head.version, 0, 0, found)
    recorded: dict[int, str] = {}
    result = _replay_from(Replay(reader, run_id), head, chain.sha256(stored), first, recorded)
    return result if result.found is not None else anchored(result, witnesses, chain.sha256(stored), recorded)


def _unchained(head: Run, first: int, stored_hash: str, witnesses: Sequence[Witness]) -> Verification:
    """A record without a hash chain: written before SPEC J6, unless something says it had one."""
    path = record_path(head.id)
    if first:  # events were written for it, so a record without a chain was edited
        found = Found(Divergence.EDITED_RECORD, head.version, path, "its hash chain was removed")
        return Verification(head.id, head.version, first, 0, found)
    for witness in witnesses:
        if (witness.anchor.version, witness.anchor.hash) != (head.version, stored_hash):
            found = stripped(head.id, witness, "the journal has no transitions to check (no hash chain, no events)")
            return Verification(head.id, head.version, 0, 0, found)
    if head.rules:  # engine rules are stamped only on records made since tamper evidence, each with its chain
        detail = (
            f"its hash chain was removed (it was made under engine rules {head.rules}, and every such record has one)"
        )
        return Verification(head.id, head.version, 0, 0, Found(Divergence.EDITED_RECORD, head.version, path, detail))
    return anchored(Verification(head.id, head.version, 0, 0, None), witnesses, stored_hash, {})


def stripped(run_id: str, witness: Witness, what: str) -> Found:
    detail = f"{what}, but {said(witness)}"
    return Found(Divergence.STRIPPED, witness.anchor.version, record_path(run_id), detail)


def said(witness: Witness) -> str:
    anchor = witness.anchor
    state = f" (state commit {anchor.state[:12]})" if anchor.state else ""
    return f"{witness.where} says version {anchor.version} had record {anchor.hash[:12]}{state}"


def anchored(
    result: Verification, witnesses: Sequence[Witness], stored_hash: str, recorded: Mapping[int, str]
) -> Verification:
    """``result`` of a journal that verified, held against each witness of its head: one newer than the journal's
    head is a rollback, one whose hash is not the journal's at its version a rewrite; an older one only lags.
    ``recorded``: the record hash of each version replayed (the head's is ``stored_hash``)."""
    agree: list[str] = []
    for witness in witnesses:
        found = disagreement(result.run_id, result.latest, witness, stored_hash, recorded)
        if found is not None:
            return Verification(result.run_id, result.latest, result.first, result.checked, found)
        agree.append(f"{witness.where} (version {witness.anchor.version})")
    return Verification(result.run_id, result.latest, result.first, result.checked, None, tuple(agree))


def disagreement(
    run_id: str, latest: int, witness: Witness, stored_hash: str, recorded: Mapping[int, str]
) -> Found | None:
    """How the journal, whose head is version ``latest``, contradicts ``witness`` (``None``: it does not; a version
    older than the journal's chain, which it cannot vouch for, says nothing either way)."""
    version = witness.anchor.version
    if version > latest:
        gone = version - latest
        detail = (
            f"the journal ends at version {latest}, but {said(witness)}: its last {counted(gone, 'transition')} "
            f"{'were' if gone > 1 else 'was'} removed, or the state branch was reset to an earlier commit"
        )
        return Found(Divergence.ROLLED_BACK, version, event_path(run_id, version), detail)
    journal = stored_hash if version == latest else recorded.get(version)
    if journal is None or journal == witness.anchor.hash:
        return None
    path = record_path(run_id) if version == latest else event_path(run_id, version)
    detail = (
        f"the journal's record of this version has hash {journal[:12]}, but {said(witness)}: the journal was "
        "rewritten from this version on"
    )
    return Found(Divergence.REWRITTEN, version, path, detail)


def _replay_from(
    replay: Replay, head: Run, stored_hash: str, first: int, recorded: dict[int, str] | None = None
) -> Verification:
    recorded = {} if recorded is None else recorded
    before: Run | None = None
    for version in range(first, head.version + 1):
        moved = replay.transition(version)
        if isinstance(moved, Found):
            return Verification(head.id, head.version, first, version - first, moved)
        recorded[version] = moved.record
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
