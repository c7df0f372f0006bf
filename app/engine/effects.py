"""Effects: what a transition asks the shell to do. The engine decides; shells only execute these.

Effects are plain dataclasses rather than frozen ones: a frozen dataclass sets every field through
``object.__setattr__``, which doubled the cost of the two effects every transition emits. Nothing
changes an effect once it is emitted; shells only read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import TypeAlias

from app.engine.context import Context, render_context
from app.engine.record import MissionKind, Reason, Status


@dataclass
class PromptParts:
    """Everything a mission prompt is built from; ``app.engine.prompt.assemble_prompt`` joins them.

    The context travels as data and is rendered only when a shell builds the prompt, so a transition never
    pays for text that nobody reads.
    """

    run_id: str
    stage: str
    capability: str
    visit: int
    seq: int
    kind: MissionKind
    extra_prompt: str
    context_data: Context
    contract: str
    reserved: str
    note: str = ""

    @cached_property
    def context(self) -> str:
        return render_context(self.context_data)


@dataclass
class DispatchMission:
    seq: int
    stage: str
    capability: str
    kind: MissionKind
    prompt: PromptParts
    key: str
    check: str | None = None
    session_id: str | None = None


@dataclass
class AskDecision:
    seq: int
    stage: str
    labels: tuple[str, ...]
    prompt: str
    key: str


@dataclass
class AskAdvisor:
    seq: int
    stage: str
    question: str
    key: str


@dataclass
class OpenGate:
    stage: str
    verdict: str
    mission: int


class MessageKind(StrEnum):
    """What a message tells people. The value names the message in the hidden mark of the comment that posts
    it on GitHub (``app/github/seen.py``), which a redelivery looks for: the values never change."""

    AUTOPILOT = "autopilot"  # a gate passed on autopilot
    GATE = "gate"  # a gate opened: a person approves or amends
    QUESTION = "question"  # the run awaits a person's answer (NEEDS_INPUT)
    UPSTREAM = "upstream"  # a request was filed upstream (NEEDS_UPSTREAM)
    END = "end"  # the delivery is ready
    STOPPED = "stopped"  # a requested stop took effect
    CANCELLED = "cancelled"  # the run was abandoned, or its pull request closed
    DONE = "done"  # its pull request was merged
    DECIDED = "decided"  # a person's command ended the wait on a decision: who chose which option, when (E3)


@dataclass
class PostMessage:
    kind: MessageKind
    text: str


@dataclass
class Escalate:
    reason: Reason
    status: Status
    decision: str


@dataclass
class FileRequest:
    target: str
    title: str
    body: str
    key: str


@dataclass
class OpenPullRequest:
    draft: bool = True


@dataclass
class ReadyPullRequest:
    pass


@dataclass
class EmitEvent:
    name: str
    stage: str


@dataclass
class Finish:
    status: Status


# Every effect a transition can emit: a closed union, so that a shell dispatching with ``match`` and
# ``assert_never`` fails type-checking when an effect is added and the shell does not handle it.
Effect: TypeAlias = (
    DispatchMission
    | AskDecision
    | AskAdvisor
    | OpenGate
    | PostMessage
    | Escalate
    | FileRequest
    | OpenPullRequest
    | ReadyPullRequest
    | EmitEvent
    | Finish
)
