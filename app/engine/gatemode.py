"""What a local run does at a human gate: its own module, free of pydantic and the rest of the engine, because
the command line names it in the ``--gates`` option of commands whose help must print without loading them
(issue 16: ``interlock --help`` starts in a fraction of what importing the engine costs)."""

from __future__ import annotations

from enum import StrEnum


class GateMode(StrEnum):
    """What a local run does at a human gate (``--gates``), as its launch records it. ``approve`` passes every
    gate on autopilot: the one part of a launch the engine reads."""

    ASK = "ask"  # ask the person at the terminal
    APPROVE = "approve"
    STOP = "stop"  # stop there, for ``interlock approve`` or ``amend`` later
