"""A small driver for engine tests: applies events with fresh keys and keeps the effects of the last step."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from app.engine import events as ev
from app.engine.effects import DispatchMission, Effect
from app.engine.graph.model import Graph
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus, Run, Usage
from app.engine.rules import Rules
from app.engine.step import step
from tests.helpers import edge, graph, node

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class Driver:
    def __init__(self, graph_: Graph | dict[str, Any], **start: Any) -> None:
        self.graph = graph_ if isinstance(graph_, Graph) else parse_graph(graph_)
        self.count = 0
        self.run: Run
        self.effects: list[Effect] = []
        self.rules: Rules | None = None  # the engine rules events are applied under (None: this engine's)
        start.setdefault("title", "Add a greeting")
        start.setdefault("body", "Please add hello().")
        self.apply(ev.Start, run_id="run-1", **start)

    def apply(self, kind: type[ev.Event], **fields: Any) -> list[Effect]:
        self.count += 1
        fields.setdefault("key", f"k{self.count}")
        fields.setdefault("at", T0 + timedelta(minutes=self.count))
        event = kind(**fields)
        self.run, self.effects = step(getattr(self, "run", None), event, self.graph, self.rules)
        return self.effects

    def finish(
        self,
        answer: str = "",
        *,
        status: MissionStatus = MissionStatus.DONE,
        commits: int = 1,
        exit_code: int | None = 0,
        usage: Usage | None = None,
        session_id: str | None = None,
    ) -> list[Effect]:
        assert self.run.waiting is not None, f"nothing awaited; status {self.run.status}"
        return self.apply(
            ev.MissionFinished,
            seq=self.run.waiting.seq,
            status=status,
            answer=answer,
            commits=commits,
            exit_code=exit_code,
            usage=usage or Usage(),
            session_id=session_id,
        )

    def dispatched(self) -> DispatchMission:
        found = [e for e in self.effects if isinstance(e, DispatchMission)]
        assert len(found) == 1, self.effects
        return found[0]

    def of(self, kind: type[Effect]) -> list[Any]:
        return [e for e in self.effects if isinstance(e, kind)]


def loop_graph(**extra: Any) -> dict[str, Any]:
    """work → review; review FAIL → work, PASS → end."""
    return graph(
        [node("work", **extra.pop("work", {})), node("review", "review", **extra.pop("review", {}))],
        [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")],
        entry="work",
        **extra,
    )
