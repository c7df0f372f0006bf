"""A run with no model: the real transition ``step`` driven by scripted answers (``interlock simulate``).

Why: to see where a graph goes on given verdicts — and what it costs — before any agent is paid. Nothing here
routes: every answer is an event, applied by the same ``step(run, event, graph)`` as real runs, so a simulated
path is the path a real run with the same answers takes. A ``Responder`` answers the effects that wait for an
answer (a mission, a decision, the advisor, a gate); the property tests of SPEC G7 drive it with random answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from app.engine.effects import AskAdvisor, AskDecision, DispatchMission, Effect, OpenGate
from app.engine.events import AdviceReturned, DecisionReturned, Event, GateApproved, MissionFinished, Start
from app.engine.graph.model import CATCH_ALL, END, FAIL, PASS, Graph, Policy
from app.engine.record import FINAL, Advice, Hop, MissionKind, MissionStatus, Run, Status
from app.engine.step import step

SIMULATION_START = datetime(2026, 1, 1, tzinfo=UTC)  # a fixed clock: a simulation is reproducible
MAX_EVENTS = 100_000  # answers a simulation gives at most: visit budgets may allow more, the report says so
Answered = DispatchMission | AskDecision | AskAdvisor | OpenGate


class Responder(Protocol):
    """Answers one effect that waits for an answer, as an event with the given key and time (``None``: the
    simulation stops there, as a run waits for a person)."""

    def __call__(self, run: Run, effect: Answered, key: str, at: datetime) -> Event | None: ...


@dataclass
class Simulation:
    """What a simulated run did: every hop in order (the record keeps only the latest), and the final record."""

    run: Run
    hops: list[Hop] = field(default_factory=list)
    stopped_at_gate: str | None = None
    gave_up_after: int | None = None  # MAX_EVENTS answers given and the run still waits for one


def simulate(
    graph: Graph, respond: Responder, *, advisor: bool = False, policy: Policy | None = None, supervision: bool = False
) -> Simulation:
    """Start a run on ``graph`` and apply the responder's answers until nothing waits for one."""
    start = Start(
        key="simulation/start",
        at=SIMULATION_START,
        run_id="simulation",
        title="simulation",
        advisor=advisor,
        policy=policy,
        supervision=supervision,
    )
    run, effects = step(None, start, graph)
    result = Simulation(run, list(run.path))
    for count in range(1, MAX_EVENTS + 1):
        waiting = _answered(effects)
        if waiting is None or run.status in FINAL:
            return result
        event = respond(run, waiting, f"simulation/{count}", SIMULATION_START + timedelta(seconds=count))
        if event is None:
            result.stopped_at_gate = waiting.stage if isinstance(waiting, OpenGate) else None
            return result
        hops_before = run.hop_count
        run, effects = step(run, event, graph)
        new_hops = run.hop_count - hops_before
        result.hops.extend(run.path[len(run.path) - new_hops :] if new_hops else [])
        result.run = run
    if _answered(effects) is not None and run.status not in FINAL:
        result.gave_up_after = MAX_EVENTS
    return result


def _answered(effects: list[Effect]) -> Answered | None:
    for effect in effects:
        if isinstance(effect, DispatchMission | AskDecision | AskAdvisor | OpenGate):
            return effect
    return None


def verdicts_of(graph: Graph, stage: str) -> tuple[str, ...] | None:
    """The verdicts a simulation may give ``stage``; ``None``: any word (the node has a catch-all edge).

    A check answers PASS or FAIL (its exit code); a decision picks one of the node's labels; a node without
    edges ends the run whatever it says."""
    node = graph.node(stage)
    if node.check is not None:
        return (PASS, FAIL)
    edges = graph.outgoing(stage)
    if not node.decides and any(edge.verdict == CATCH_ALL for edge in edges):
        return None
    return graph.labels(stage) or (PASS,)


def outcome_line(run: Run) -> str:
    """The final status in words: where the run stopped, and why."""
    where = "the end" if run.stage == END else repr(run.stage)
    line = f"{run.status.value} at {where}"
    if run.reason is not None:
        line += f": {run.reason.code.value} — {run.reason.message}"
    return line


def finished(run: Run) -> bool:
    """Whether the simulated run reached ``__end__``."""
    return run.stage == END and run.status in (Status.AWAITING_MERGE, Status.DONE)


@dataclass
class ScriptedVerdicts:
    """The answers of ``interlock simulate``: each stage's verdicts in turn, PASS once its list runs out (or
    when it has none). A decide node's mission says nothing and its decision gives the verdict; a check's
    verdict is its exit code. Gates are approved, or the simulation stops at the first one."""

    graph: Graph
    verdicts: dict[str, list[str]]
    approve_gates: bool = True
    used: dict[str, int] = field(default_factory=dict)

    def next_verdict(self, stage: str) -> str:
        given = self.verdicts.get(stage, [])
        count = self.used.get(stage, 0)
        self.used[stage] = count + 1
        return given[count] if count < len(given) else PASS

    def __call__(self, run: Run, effect: Answered, key: str, at: datetime) -> Event | None:
        if isinstance(effect, OpenGate):
            return GateApproved(key=key, at=at, by="simulation") if self.approve_gates else None
        if isinstance(effect, AskDecision):
            answer = f"VERDICT: {self.next_verdict(effect.stage)}"
            return DecisionReturned(key=key, at=at, seq=effect.seq, answer=answer)
        if isinstance(effect, AskAdvisor):  # a scripted mission never fails: kept for completeness
            return AdviceReturned(key=key, at=at, seq=effect.seq, advice=Advice.ESCALATE)
        node = self.graph.node(effect.stage)
        if node.decides and effect.kind is not MissionKind.REASK:
            return MissionFinished(key=key, at=at, seq=effect.seq, status=MissionStatus.DONE, answer="", commits=1)
        verdict = self.next_verdict(effect.stage)
        return MissionFinished(
            key=key,
            at=at,
            seq=effect.seq,
            status=MissionStatus.DONE,
            answer=f"(simulated)\nVERDICT: {verdict}",
            commits=1,
            exit_code=0 if verdict.casefold() == PASS.casefold() else 1,
        )
