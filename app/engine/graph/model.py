"""The graph model: a workflow as data (SPEC G1, G2).

A graph is parsed strictly — unknown keys are refused, because a typo such as ``humanGat`` that passed
silently would remove a human gate without anyone noticing. The models here describe a *valid* graph;
``app.engine.graph.validate`` is what turns arbitrary JSON into one, reporting every problem on the way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

T = TypeVar("T")
END = "__end__"
CATCH_ALL = "*"
PASS = "PASS"
FAIL = "FAIL"
NEEDS_INPUT = "NEEDS_INPUT"
NEEDS_UPSTREAM = "NEEDS_UPSTREAM"
RESERVED_VERDICTS = frozenset({NEEDS_INPUT, NEEDS_UPSTREAM})
CONFLICT = "CONFLICT"  # an edge label only the engine routes on: the delivery conflicts with its base (SPEC V9)
_CONFLICT_KEY = CONFLICT.casefold()
DEFAULT_MAX_VISITS = 3


class StrictModel(BaseModel):
    """Base for boundary models: strict types, no unknown keys, immutable once built."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=False)


class DecideSpec(StrictModel):
    """Which cheap decision model picks the verdict of a ``decide`` node (SPEC V8)."""

    agent: str | None = Field(None, description="Agent command or preset; the team's advisor agent if unset.")
    model: str | None = Field(None, description="Model name passed to the agent.")
    prompt: str | None = Field(None, description="Extra instruction for the decision.")


class Node(StrictModel):
    """One step of the workflow. It holds no routing logic: every route is an edge."""

    stage: str = Field(description="Unique id of the step.")
    capability: str = Field(description="The capability a role must carry to do this step.")
    extra_prompt: str = Field("", alias="extraPrompt", description="Instruction added to the role's prompt.")
    human_gate: bool = Field(False, alias="humanGate", description="A person approves before the run moves on.")
    max_visits: int = Field(DEFAULT_MAX_VISITS, alias="maxVisits", description="Visit budget of the node (at least 1).")
    event: str | None = Field(None, description="Project event emitted when the node passes.")
    check: str | None = Field(None, description="Command whose exit code is the verdict: 0 PASS, else FAIL.")
    decide: bool | DecideSpec = Field(False, description="Let a cheap decision model pick the verdict.")
    requires_changes: bool = Field(
        False, alias="requiresChanges", description="The mission must leave at least one new commit."
    )
    ui: dict[str, Any] = Field(default_factory=dict, description="Editor data, ignored by the engine.")

    @property
    def decides(self) -> bool:
        return self.decide is not False


class Edge(StrictModel):
    """A route: from a stage, on a verdict label, to a stage or ``__end__``."""

    source: str = Field(alias="from")
    verdict: str = ""
    target: str = Field(alias="to")


class Policy(StrictModel):
    """Run budgets charged before every call (SPEC P1). ``None`` means unlimited."""

    max_attempts: int | None = Field(None, alias="maxAttempts", ge=1, description="missions the run may dispatch")
    max_calls: int | None = Field(None, alias="maxCalls", ge=1, description="model calls the run may make")
    max_units: float | None = Field(
        None, alias="maxUnits", gt=0, description="cost units the run may spend (`unitCosts` says what a call costs)"
    )
    max_cost_usd: float | None = Field(
        None, alias="maxCostUsd", gt=0, description="US dollars the run may spend, from the prices of its models"
    )
    unit_costs: dict[str, float] = Field(
        default_factory=dict,
        alias="unitCosts",
        description="Cost units per capability or mission kind; 1 per call when not listed.",
    )

    @property
    def limited(self) -> bool:
        """Whether any budget is set: an unlimited policy refuses nothing and needs no arithmetic."""
        return (self.max_attempts, self.max_calls, self.max_units, self.max_cost_usd) != (None, None, None, None)


class GateRules(StrictModel):
    """How the graph's human gates may be passed (SPEC H6). Also a team's ``gates:`` on GitHub."""

    separate_duties: bool = Field(
        False,
        alias="separateDuties",
        description="The person who requested a run may not approve its gates (SPEC H6).",
    )


class Graph(StrictModel):
    """A validated workflow graph. Build it with ``app.engine.graph.validate.parse_graph``."""

    name: str
    description: str = ""
    entry: str
    nodes: tuple[Node, ...] = Field(strict=False)
    edges: tuple[Edge, ...] = Field(strict=False)
    policy: Policy = Field(default_factory=Policy)
    gates: GateRules = Field(default_factory=GateRules)

    _by_stage: dict[str, Node] = PrivateAttr(default_factory=dict)
    _outgoing: dict[str, tuple[Edge, ...]] = PrivateAttr(default_factory=dict)
    _labels: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _memo: dict[Any, Any] = PrivateAttr(default_factory=dict)
    if TYPE_CHECKING:
        # pydantic declares it optional, for models without private attributes; a graph always has them
        __pydantic_private__: dict[str, Any]

    def model_post_init(self, context: Any, /) -> None:
        self._by_stage = {node.stage: node for node in self.nodes}
        outgoing: dict[str, list[Edge]] = {node.stage: [] for node in self.nodes}
        for edge in self.edges:
            outgoing.setdefault(edge.source, []).append(edge)
        self._outgoing = {stage: tuple(edges) for stage, edges in outgoing.items()}
        self._labels = {stage: distinct_labels(e.verdict for e in edges) for stage, edges in self._outgoing.items()}
        self._memo = {}

    def node(self, stage: str) -> Node:
        """The node called ``stage``; ``KeyError`` when there is none.

        The lookups read the private dict directly: pydantic's attribute hook for private fields would
        cost more than the rest of a transition's routing.
        """
        nodes: dict[str, Node] = self.__pydantic_private__["_by_stage"]
        return nodes[stage]

    def find(self, stage: str) -> Node | None:
        """The node called ``stage``, or ``None``: one lookup where ``has_stage`` then ``node`` would make two."""
        nodes: dict[str, Node] = self.__pydantic_private__["_by_stage"]
        return nodes.get(stage)

    def has_stage(self, stage: str) -> bool:
        return stage in self.__pydantic_private__["_by_stage"]

    def outgoing(self, stage: str) -> tuple[Edge, ...]:
        """The edges leaving ``stage``, in the order the graph lists them."""
        outgoing: dict[str, tuple[Edge, ...]] = self.__pydantic_private__["_outgoing"]
        return outgoing.get(stage, ())

    def labels(self, stage: str) -> tuple[str, ...]:
        """The verdicts a node can route (SPEC V1): distinct edge labels, in edge order, ``*`` excluded."""
        labels: dict[str, tuple[str, ...]] = self.__pydantic_private__["_labels"]
        return labels.get(stage, ())

    def memo(self, key: Any, make: Callable[[], T]) -> T:
        """A value derived from this (immutable) graph, computed once: contracts, for instance."""
        cache: dict[Any, Any] = self.__pydantic_private__["_memo"]
        if key not in cache:
            cache[key] = make()
        value: T = cache[key]  # the value ``make`` returned for this key (no ``cast``: a call at every read)
        return value

    def to_json(self) -> dict[str, Any]:
        """The graph as its file format, without defaults left implicit."""
        return self.model_dump(by_alias=True, exclude_defaults=True, mode="json")

    def content_hash(self) -> str:
        """A stable hash of the graph's content, stored with every run (SPEC J1)."""
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def distinct_labels(verdicts: Any) -> tuple[str, ...]:
    """Labels in first-seen order, compared without regard to case, ``*`` and ``CONFLICT`` excluded: the labels a
    node's answers can route. ``CONFLICT`` is the engine's own (SPEC V9), never offered to a worker or a decision."""
    seen: set[str] = set()
    labels: list[str] = []
    for verdict in verdicts:
        key = verdict.casefold()
        if verdict == CATCH_ALL or key in seen or key == _CONFLICT_KEY:
            continue
        seen.add(key)
        labels.append(verdict)
    return tuple(labels)
