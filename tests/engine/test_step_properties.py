"""Property-based checks of the transition ``step(run, event, graph)`` (SPEC J1, J2, S, B1, B2, P2, P3).

A Hypothesis state machine starts a run, then throws arbitrary events at it — results for the awaited
mission and for stale ones, answers with every kind of verdict and garbage, gates, stops, resumes at
real and bogus stages, routes on real and bogus labels, upstream moves, merges, decisions, advice —
and replays events already applied. After every event it checks the invariants below. Two graphs are
driven: the library's feature graph, and a small graph that has a review loop, a ``decide`` node, a
``check`` node, a human gate, a strict node and a ``*`` edge.

The JSON round-trip of the record (SPEC J1) is checked by a machine of its own, so that a failure there
does not hide what the other invariants would find. A last, deterministic test replays an event after more
than ``KEY_WINDOW`` others: the case a machine of this size reaches only by chance.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, ClassVar

from hypothesis import HealthCheck, settings
from hypothesis import event as tally
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from app.engine.effects import Effect
from app.engine.errors import InterlockError, RunFinished, StaleEvent
from app.engine.events import (
    Abandon,
    AdviceReturned,
    Closed,
    DecisionReturned,
    Deliver,
    Event,
    GateAmended,
    GateApproved,
    InputAnswered,
    Merged,
    MissionFinished,
    Resume,
    RouteChosen,
    Start,
    StopRequested,
    UpstreamChanged,
)
from app.engine.graph.model import Graph, Policy
from app.engine.graph.validate import parse_graph
from app.engine.record import (
    FINAL,
    HOP_WINDOW,
    KEY_WINDOW,
    MISSION_WINDOW,
    Ledger,
    MissionKind,
    MissionStatus,
    Run,
    Status,
    UpstreamState,
    Usage,
)
from app.engine.step import step
from app.graphset import load_graph
from tests.helpers import GRAPHS, edge, graph, node

BASE = datetime(2025, 1, 1, tzinfo=UTC)

# Answers a worker may give, weighted towards verdicts that route, so that review loops turn.
ANSWERS = [
    *["VERDICT: PASS", "Done.\nVERDICT: PASS", "VERDICT: pass"],
    *["VERDICT: fail", "VERDICT: FAIL", "VERDICT: Fail", "1. the test is missing\n**Verdict:** `FAIL`"],
    "",
    "I need to know which database to use.\nVERDICT: NEEDS_INPUT",
    "VERDICT: NEEDS_UPSTREAM\n```request\nowner/repo\nTitle\nbody\n```",
    "VERDICT: NEEDS_UPSTREAM",  # no request block: unroutable
    "VERDICT: SHIP",
    "VERDICT: rework",
    "VERDICT: FEATURE",
    "VERDICT: BUG",
    "VERDICT: MAYBE",
    "garbage ✓ ünïcødé \x00 ```",
    "VERDICT:",
]
# How the job ended besides the answer: new commits, the check's exit code, the agent's session.
OUTCOMES: list[dict[str, Any]] = [
    {"commits": 1, "exit_code": 0, "session_id": None},
    {"commits": 1, "exit_code": 1, "session_id": "sess-1"},
    {"commits": 0, "exit_code": 0, "session_id": None},
    {"commits": 1, "exit_code": None, "session_id": None},
    {"commits": 0, "exit_code": 1, "session_id": "sess-2"},
    {"commits": 2, "exit_code": 0, "session_id": "sess-1"},
]
DECISIONS = ["SHIP", "ship", "REWORK", "VERDICT: REWORK", "PASS", "FAIL", "", "maybe", "VERDICT: SHIP\nnoise"]
ADVICE = ["retry", "RETRY", "revise", "escalate", None, "", "banana"]
UPSTREAM_STATES = list(UpstreamState)  # a closed union: the shells make no other state
BOGUS = ["nowhere", "__end__", "", "NEEDS_INPUT", "NEEDS_UPSTREAM", "*"]

# Kinds of event the machine draws, with their weights: mostly what the run waits for, so that runs go deep
# (visit and policy budgets run out), but every kind of event turns up at every status.
WEIGHTS = {
    "fitting": 14,
    "mission": 3,
    "decision": 1,
    "advice": 1,
    "approve": 1,
    "amend": 1,
    "stop": 1,
    "resume": 1,
    "route": 1,
    "deliver": 1,
    "input": 1,
    "upstream": 1,
    "start": 1,
    "finishing": 1,  # abandon, merged or closed (3 times in 11): rare, since nothing follows them
}
KINDS = [kind for kind, weight in WEIGHTS.items() for _ in range(weight)] + ["fitting"]  # both ends: "fitting"
FITTING = {
    Status.GATE_WAIT: ["approve", "approve", "amend", "stop"],
    Status.AWAITING_INPUT: ["input", "resume"],
    Status.AWAITING_UPSTREAM: ["upstream", "upstream", "resume"],
    Status.AWAITING_MERGE: ["merged", "stop", "resume", "deliver", "route", "mission", "closed", "approve"],
    Status.FAILED: ["resume", "resume", "route"],
    Status.ESCALATED: ["resume", "resume", "route"],
    Status.INTERRUPTED: ["resume", "resume", "route"],
}


def loop_graph_data() -> dict[str, Any]:
    """Triage (strict), a gated plan, a build that must commit, a check, a gated review with a ``*`` edge
    and a FAIL loop, and a ``decide`` judge that ships or sends the work back."""
    return graph(
        [
            node("triage", "triage", maxVisits=2),
            node("plan", "planning", humanGate=True, maxVisits=2),
            node("build", "coding", requiresChanges=True, maxVisits=3),
            node("test", "testing", check="pytest -q", maxVisits=4),
            node("review", "review", humanGate=True, maxVisits=3),
            node("judge", "review", decide=True, maxVisits=2),
        ],
        [
            edge("triage", "FEATURE", "plan"),
            edge("triage", "BUG", "build"),
            edge("plan", "PASS", "build"),
            edge("build", "PASS", "test"),
            edge("test", "PASS", "review"),
            edge("test", "FAIL", "build"),
            edge("review", "PASS", "judge"),
            edge("review", "FAIL", "build"),
            edge("review", "*", "plan"),
            edge("judge", "SHIP", "__end__"),
            edge("judge", "REWORK", "build"),
        ],
        entry="triage",
    )


@cache
def load(name: str) -> Graph:
    if name == "feature":
        return load_graph(GRAPHS / "delivery" / "feature.json")
    return parse_graph(loop_graph_data())


def optional_limit(low: int, high: int) -> st.SearchStrategy[int | None]:
    return st.one_of(st.none(), st.integers(low, high))


policies = st.one_of(
    st.none(),  # the graph's own policy
    st.just(Policy()),  # no limit: loops run until their visit budgets stop them
    st.builds(
        lambda attempts, calls, units, costs: Policy.model_validate(
            {
                key: value
                for key, value in (
                    ("maxAttempts", attempts),
                    ("maxCalls", calls),
                    ("maxUnits", units),
                    ("unitCosts", costs),
                )
                if value is not None
            }
        ),
        optional_limit(1, 8),
        optional_limit(1, 10),
        st.one_of(st.none(), st.sampled_from([1.0, 2.5, 6.0, 15.0])),
        st.one_of(st.none(), st.just({"coding": 2.0, "decide": 0.5})),
    ),
)
# What agents report: nothing, or figures of every kind (built once: one draw each, generation stays cheap).
usages = st.sampled_from(
    [
        Usage(),
        Usage(),
        Usage(calls=1, input_tokens=1200, output_tokens=300, cost_usd=0.01, seconds=1.5),
        Usage(calls=3, input_tokens=5000, output_tokens=0, cost_usd=0.25, seconds=30.0, estimated=True),
        Usage(calls=0, output_tokens=42),
    ]
)


def ledger_figures(ledger: Ledger) -> dict[str, float]:
    """Every figure of the ledger that may only grow, flattened: totals and each category's line."""
    figures: dict[str, float] = {
        "attempts": ledger.attempts,
        "calls": ledger.calls,
        "units": ledger.units,
        "accepted": ledger.accepted,
    }
    for category, line in ledger.by_category.items():
        for name in ("attempts", "calls", "units", "accepted", "input_tokens", "output_tokens", "cost_usd", "seconds"):
            figures[f"{category.value}.{name}"] = getattr(line, name)
    return figures


class RunMachine(RuleBasedStateMachine):
    """Drives one run with arbitrary events; subclasses choose the graph(s)."""

    GRAPHS: ClassVar[tuple[str, ...]] = ("feature", "loop")

    def __init__(self) -> None:
        super().__init__()
        self.graph: Graph = load("feature")
        self.run: Run | None = None
        self.count = 0
        self.history: list[Event] = []  # events applied, for replays
        self.keys: set[str] = set()  # their idempotency keys
        # Calls agents reported beyond the one charged at dispatch (an HTTP agent's retried requests): charged when
        # reported, never refunded (SPEC P2, issue 17), so they may carry the ledger past maxCalls once
        self.reported_extra = 0

    # ---- building events ----------------------------------------------------------------------------

    def _base(self) -> dict[str, Any]:
        self.count += 1
        return {"key": f"event-{self.count}", "at": BASE + timedelta(seconds=self.count), "by": "someone"}

    def _seq(self, data: st.DataObject, kinds: tuple[MissionKind, ...] | None) -> int:
        """Usually the awaited seq (when the run waits on a call of ``kinds``), sometimes a stale one."""
        run = self.run
        assert run is not None
        waiting = run.waiting
        awaited = waiting is not None and (kinds is None or waiting.kind in kinds)
        if awaited and data.draw(st.integers(0, 9), label="stale?") < 8:
            assert waiting is not None
            return waiting.seq
        return data.draw(st.integers(0, run.mission_count + 2), label="seq")

    def _labels(self) -> list[str]:
        assert self.run is not None
        stage = self.run.stage
        own = list(self.graph.labels(stage)) if self.graph.has_stage(stage) else []
        every = sorted({e.verdict for e in self.graph.edges})
        return own + [label.lower() for label in own] + every + BOGUS

    def _event(self, data: st.DataObject, kind: str) -> Event:
        run = self.run
        assert run is not None
        if kind == "finishing":
            finishing = ["fitting", "abandon", *["fitting"] * 6, "merged", "closed", "fitting"]
            kind = data.draw(st.sampled_from(finishing), label="finishing kind")
        if kind == "fitting":
            kind = self._fitting(data)
        base = self._base()
        if kind == "mission":
            return MissionFinished(
                **base,
                seq=self._seq(data, None),
                status=data.draw(
                    st.sampled_from([MissionStatus.DONE] * 18 + list(MissionStatus)), label="mission status"
                ),
                answer=data.draw(st.sampled_from(ANSWERS), label="answer"),
                usage=data.draw(usages, label="usage"),
                **data.draw(st.sampled_from(OUTCOMES), label="commits, exit code, session"),
            )
        if kind == "decision":
            return DecisionReturned(
                **base,
                seq=self._seq(data, (MissionKind.DECIDE,)),
                answer=data.draw(st.sampled_from(DECISIONS), label="decision"),
                usage=data.draw(usages, label="usage"),
            )
        if kind == "advice":
            return AdviceReturned(
                **base,
                seq=self._seq(data, (MissionKind.ADVISOR,)),
                advice=data.draw(st.sampled_from(ADVICE), label="advice"),
                instruction=data.draw(st.sampled_from(["", "  ", "Use the other API."]), label="instruction"),
                usage=data.draw(usages, label="usage"),
            )
        if kind == "approve":
            return GateApproved(**base, note=data.draw(st.sampled_from(["", "Looks good."]), label="note"))
        if kind == "amend":
            return GateAmended(**base, note=data.draw(st.sampled_from(["", "Split the change."]), label="note"))
        if kind == "stop":
            return StopRequested(**base)
        if kind == "resume":
            stages = [None, None, *(n.stage for n in self.graph.nodes), "bogus", "__end__"]
            return Resume(**base, stage=data.draw(st.sampled_from(stages), label="resume stage"))
        if kind == "route":
            return RouteChosen(**base, verdict=data.draw(st.sampled_from(self._labels()), label="route verdict"))
        if kind == "deliver":
            return Deliver(**base)
        if kind == "abandon":
            return Abandon(**base)
        if kind == "input":
            return InputAnswered(**base, text=data.draw(st.sampled_from(["", "Use PostgreSQL."]), label="text"))
        if kind == "upstream":
            return UpstreamChanged(
                **base,
                state=data.draw(st.sampled_from(UPSTREAM_STATES), label="upstream state"),
                id=data.draw(st.sampled_from([None, "owner/repo#7"]), label="upstream id"),
            )
        if kind == "merged":
            return Merged(**base)
        if kind == "closed":
            return Closed(**base)
        assert kind == "start", kind
        return Start(**base, run_id="r2", title="a second start on the same run")

    def _fitting(self, data: st.DataObject) -> str:
        """The kind of event the run waits for, mostly: what moves it forward."""
        run = self.run
        assert run is not None
        if run.status is Status.RUNNING:
            if run.waiting is not None and run.waiting.kind is MissionKind.DECIDE:
                return "decision"
            if run.waiting is not None and run.waiting.kind is MissionKind.ADVISOR:
                return "advice"
            return "mission"
        return data.draw(st.sampled_from(FITTING.get(run.status, ["mission"])), label="fitting kind")

    # ---- rules ----------------------------------------------------------------------------------------

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        self.graph = load(data.draw(st.sampled_from(self.GRAPHS), label="graph"))
        event = Start(
            **self._base(),
            run_id="r1",
            title="Add a feature",
            body="As a user, I want ünïcødé.",
            policy=data.draw(policies, label="policy"),
            autopilot=data.draw(st.booleans(), label="autopilot"),
            advisor=data.draw(st.booleans(), label="advisor"),
            upstream=data.draw(st.sampled_from([(), ("owner/repo",), ("OWNER/*",)]), label="upstream allowed"),
        )
        run, effects = step(None, event, self.graph)
        assert run.version == 1  # SPEC J1
        assert all(isinstance(effect, Effect) for effect in effects)
        self.history.append(event)
        self.keys.add(event.key)
        usage = getattr(event, "usage", None)
        self.reported_extra += max(usage.calls - 1, 0) if isinstance(usage, Usage) else 0
        self._check_state(run, None)
        self.run = run

    @rule(data=st.data(), count=st.integers(1, 6))
    def apply_events(self, data: st.DataObject, count: int) -> None:
        """A burst of events, so that runs go deep within few steps of the machine."""
        for _ in range(count):
            kind = data.draw(st.sampled_from(KINDS), label="kind")
            self._apply(self._event(data, kind))

    @precondition(lambda self: bool(self.history))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        self._apply(data.draw(st.sampled_from(self.history), label="replayed event"))

    # ---- checks ---------------------------------------------------------------------------------------

    def _apply(self, event: Event) -> None:
        before = self.run
        assert before is not None
        journal = before.journal()
        # SPEC J2: an event counts as replayed if its key was ever applied, however long ago
        replayed = event.key in self.keys
        remembered = event.key in before.applied
        try:
            # SPEC S, J2: step raises nothing but the engine's typed errors; anything else escapes and fails
            after, effects = step(before, event, self.graph)
        except InterlockError as exc:
            tally(f"refused: {type(event).__name__} ({type(exc).__name__})")
            # a refused event changes nothing (the record passed in is untouched)
            assert before.journal() == journal, "a refused event changed the record it was given"
            # SPEC J2: a replay whose key is still remembered is a silent no-op; one whose key left the bounded
            # window (SPEC J5) may be refused as stale instead — it still changes nothing
            assert not replayed or (not remembered and isinstance(exc, StaleEvent)), f"a replayed event raised {exc!r}"
            if before.status in FINAL and not replayed:
                assert isinstance(exc, RunFinished), f"{exc!r} on a {before.status} run"  # SPEC S
            return
        # step is pure: the record passed in is never mutated, even when the event applies
        assert before.journal() == journal, "step mutated the record it was given"
        assert all(isinstance(effect, Effect) for effect in effects)
        if replayed:
            # SPEC J2: the same idempotency key twice changes nothing and asks for nothing (SPEC S: on a done or
            # cancelled run too, so that a final record never changes)
            assert after == before and after.journal() == journal, "a replayed event changed the run"
            assert effects == [], f"a replayed event produced effects: {effects!r}"
            return
        # SPEC S: a done or cancelled run takes no new event
        assert before.status not in FINAL, f"{type(event).__name__} was applied to a {before.status} run"
        # SPEC J1: one applied event, one version
        assert after.version == before.version + 1, (before.version, after.version)
        assert event.key in after.applied  # SPEC J2: the key is remembered
        self.history.append(event)
        self.keys.add(event.key)
        usage = getattr(event, "usage", None)
        self.reported_extra += max(usage.calls - 1, 0) if isinstance(usage, Usage) else 0
        reason = after.reason.code.value if after.reason else "-"
        tally(f"applied: {type(event).__name__} -> {after.status.value} ({reason})")
        self._check_state(after, before)
        self.run = after

    def _check_state(self, run: Run, previous: Run | None) -> None:
        # SPEC S: a known status; a running run always waits on a call it asked for
        assert isinstance(run.status, Status) and run.status in set(Status)
        if run.status is Status.RUNNING:
            assert run.waiting is not None, "the run is running but waits on nothing"
        # SPEC B1, B2: a counter may pass its budget by one (the entry that escalates), never more
        for stage, count in run.visits.items():
            budget = self.graph.node(stage).max_visits
            assert 0 <= count <= budget + 1, f"{stage} visited {count} times with maxVisits {budget}"
        # SPEC P2: charged before the call — within a window (since the last re-arm) the policy holds
        policy, ledger, window = run.policy, run.ledger, run.window
        if policy.max_attempts is not None:
            assert ledger.attempts - window.attempts <= policy.max_attempts, (ledger, window, policy)
        if policy.max_calls is not None:
            # charged before the call; calls reported beyond those after it (SPEC P2, issue 17)
            assert ledger.calls - window.calls <= policy.max_calls + self.reported_extra, (ledger, window, policy)
        if policy.max_units is not None:
            assert ledger.units - window.units <= policy.max_units + 1e-9, (ledger, window, policy)
        # SPEC P3: the ledger adds up — totals are the sum of the categories
        assert ledger.attempts == sum(line.attempts for line in ledger.by_category.values())
        assert ledger.calls == sum(line.calls for line in ledger.by_category.values())
        assert ledger.accepted == sum(line.accepted for line in ledger.by_category.values())
        assert math.isclose(ledger.units, sum(line.units for line in ledger.by_category.values()), abs_tol=1e-9)
        if previous is not None:
            # SPEC P2, P3: charges are never refunded — no figure of the ledger ever decreases
            old, new = ledger_figures(previous.ledger), ledger_figures(ledger)
            for name, value in old.items():
                assert name in new and new[name] >= value - 1e-9, f"ledger {name} went from {value} to {new.get(name)}"
            # SPEC B4, P2: the budget window only moves forward (a re-arm starts at the current ledger)
            assert window.attempts >= previous.window.attempts and window.calls >= previous.window.calls
            # SPEC J1, J5: missions and hops are numbered by counters that only grow
            assert run.mission_count >= previous.mission_count and run.hop_count >= previous.hop_count
        # SPEC J5: summaries, hops and keys live in bounded windows; the summaries are the latest, in order
        assert len(run.missions) <= MISSION_WINDOW and len(run.path) <= HOP_WINDOW and len(run.applied) <= KEY_WINDOW
        first = run.mission_count - len(run.missions) + 1
        assert [m.seq for m in run.missions] == list(range(first, run.mission_count + 1))


class FeatureRun(RunMachine):
    GRAPHS = ("feature",)


class LoopRun(RunMachine):
    GRAPHS = ("loop",)


class RoundTripRun(RunMachine):
    """The same walk, checking that every record survives the journal (SPEC J1)."""

    @invariant()
    def journal_round_trips(self) -> None:
        if self.run is None:
            return
        # SPEC J1: the record written to the journal reads back as the same record
        journal = self.run.journal()
        assert Run.from_journal(journal) == self.run
        assert Run.from_journal(journal).journal() == journal


STATEFUL = settings(
    max_examples=100,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TestFeatureRun = FeatureRun.TestCase
TestFeatureRun.settings = STATEFUL
TestLoopRun = LoopRun.TestCase
TestLoopRun.settings = STATEFUL
TestJournalRoundTrip = RoundTripRun.TestCase
TestJournalRoundTrip.settings = settings(STATEFUL, max_examples=40, stateful_step_count=25)


def test_an_event_replayed_long_after_changes_nothing() -> None:
    # SPEC J2: the same idempotency key twice changes nothing — however many events came in between. The record
    # keeps only the latest KEY_WINDOW keys (SPEC J5), so this replays a resume once its key has left the window:
    # it may be refused as stale, but it must not resume the run a second time.
    graph_ = load("feature")
    at = iter(BASE + timedelta(seconds=n) for n in range(10_000))
    run, _ = step(None, Start(key="start", at=next(at), run_id="r1", title="Add a feature"), graph_)
    run, _ = step(run, StopRequested(key="stop-1", at=next(at)), graph_)
    assert run.waiting is not None
    skipped = MissionFinished(key="skipped-1", at=next(at), seq=run.waiting.seq, status=MissionStatus.SKIPPED)
    run, _ = step(run, skipped, graph_)
    resume = Resume(key="resume-1", at=next(at))
    run, _ = step(run, resume, graph_)
    run, _ = step(run, StopRequested(key="stop-2", at=next(at)), graph_)
    assert run.waiting is not None
    skipped = MissionFinished(key="skipped-2", at=next(at), seq=run.waiting.seq, status=MissionStatus.SKIPPED)
    run, _ = step(run, skipped, graph_)
    for index in range(KEY_WINDOW):  # a stop on an interrupted run applies and changes nothing but the version
        run, _ = step(run, StopRequested(key=f"stop-again-{index}", at=next(at)), graph_)
    assert run.status is Status.INTERRUPTED and resume.key not in run.applied
    journal = run.journal()
    try:
        again, effects = step(run, resume, graph_)  # the webhook delivery of the resume, redelivered
    except StaleEvent:
        again, effects = run, []
    assert effects == [], f"a replayed resume asked for {[type(effect).__name__ for effect in effects]}"
    assert again.journal() == journal == run.journal(), "a replayed resume changed the run"
