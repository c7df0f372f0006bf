"""The launch a run records, and the overrides of the commands that continue it (SPEC J1, J5)."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import events as ev
from app.engine.errors import EventRejected
from app.engine.record import RELAUNCH_WINDOW, Launch, Run, Status
from tests.engine.driver import T0, Driver
from tests.helpers import edge, graph, node

GATED = graph(
    [node("plan", "planning", humanGate=True), node("build")],
    [edge("plan", "PASS", "build"), edge("build", "PASS", "__end__")],
    entry="plan",
)


def launch(command: str, agent: str, gates: str | None = None, changed: list[str] | None = None) -> Launch:
    return Launch(
        command=command,
        at=T0,
        changed=changed or [],
        agents={"default": agent},
        gates=gates,
        settings={"agent": agent, "gates": gates},
    )


def at_gate(**start: Any) -> Driver:
    driver = Driver(GATED, launch=launch("run", "./a.sh"), **start)
    driver.finish("the plan")
    assert driver.run.status is Status.GATE_WAIT
    return driver


def test_the_start_records_its_launch_and_the_journal_reads_it_back() -> None:
    # SPEC J1: how the run was launched is part of its record, saved with the start transition
    driver = at_gate()
    assert driver.run.launch == launch("run", "./a.sh") and driver.run.relaunches == []
    again = Run.from_journal(driver.run.journal_json())
    assert again.launch == driver.run.launch and again.journal()["launch"]["agents"] == {"default": "./a.sh"}


def test_an_override_is_kept_with_the_event_that_carried_it_and_gates_approve_is_autopilot() -> None:
    # SPEC J1, H4: the override is recorded in the same transition as the command's own event
    driver = at_gate()
    override = launch("resume", "./b.sh", gates="approve", changed=["agent", "gates"])
    driver.apply(ev.Resume, launch=override)
    assert driver.run.relaunches == [override] and driver.run.launch == launch("run", "./a.sh")
    assert driver.run.autopilot and driver.run.status is Status.RUNNING
    driver.finish("plan again")
    assert driver.run.stage == "build" and "passed by autopilot" in str(driver.run.context.json_data())


def test_a_refused_command_records_no_override() -> None:
    driver = Driver(GATED, launch=launch("run", "./a.sh"))
    before = driver.run
    with pytest.raises(EventRejected, match="must be gate_wait"):
        driver.apply(ev.GateApproved, launch=launch("approve", "./b.sh", changed=["agent"]))
    assert driver.run is before and before.relaunches == []


def test_overrides_stay_bounded_and_the_last_one_is_kept() -> None:
    # SPEC J5: the record stays bounded however many times a person overrides the launch
    driver = at_gate()
    for number in range(RELAUNCH_WINDOW + 5):
        driver.apply(ev.StopRequested)
        driver.apply(ev.Resume, launch=launch("resume", f"./agent-{number}.sh", changed=["agent"]))
    assert len(driver.run.relaunches) == RELAUNCH_WINDOW
    assert driver.run.relaunches[-1].agents == {"default": f"./agent-{RELAUNCH_WINDOW + 4}.sh"}
    assert driver.run.launch == launch("run", "./a.sh")
