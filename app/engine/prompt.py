"""The prompt a mission receives, assembled by the engine (SPEC V1–V6, C2).

Order matters: who you are (role), what this step is for (capability, extraPrompt), what happened so far
(the compacted context, with the request fenced as data), and last what to answer with (the verdict
contract and the two reserved verdicts), because agents weigh the end of a prompt most.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.context import Tiers, compact_into
from app.engine.effects import PromptParts
from app.engine.record import MissionKind
from app.engine.team import Role

_KIND_NOTES = {
    MissionKind.REASK: "This is a re-ask: answer with the verdict line only.",
    MissionKind.AMEND: "A person asked for changes: apply the amendments at the end of the preamble.",
    MissionKind.RESUME: "You were interrupted mid-way: continue your previous session where it stopped.",
    MissionKind.RETRY: "Your previous attempt did not finish: try again.",
}


def assemble_prompt(parts: PromptParts, role: Role | None = None) -> str:
    sections = [
        f"# Interlock mission #{parts.seq} — run {parts.run_id}, stage `{parts.stage}`, visit {parts.visit} "
        f"({parts.kind.value})",
        _role_section(parts, role),
    ]
    if parts.extra_prompt:
        sections.append(f"## This step\n{parts.extra_prompt}")
    notes = [text for text in (_KIND_NOTES.get(parts.kind, ""), parts.note) if text]
    if notes:
        sections.append("## Note\n" + "\n\n".join(notes))
    sections.append(f"# Context\n\n{parts.context}")
    sections += [text for text in (parts.contract, parts.reserved) if text]
    return "\n\n".join(sections) + "\n"


def _role_section(parts: PromptParts, role: Role | None) -> str:
    if role is None or not role.system_prompt:
        intro = f"You carry the capability `{parts.capability}` in a team of agents working on one request."
    else:
        intro = role.system_prompt
    lines = [f"## Your role\n{intro}"]
    if role is not None and role.tools:
        lines.append(f"Tools you may use: {', '.join(role.tools)}. Use no other.")
    if role is not None and role.deliverables:  # SPEC U1: a role's template names what it hands over
        lines.append(f"What you hand over: {'; '.join(role.deliverables)}.")
    lines.append(
        "Work in the current directory. Do not create branches, push or merge: Interlock commits your changes."
    )
    return "\n".join(lines)


def overflow_parts(parts: PromptParts) -> PromptParts | None:
    """The parts of a prompt the model's server refused as longer than its context, compacted by the tightest
    tiers that still show the newest result: that one cut to the cut tier's size, every older one reduced to
    its header and routing lines, as history. The request, the stage's instructions and the verdict contract
    stay whole (SPEC C1). ``None`` when that cuts nothing: no shorter prompt exists."""
    context = parts.context_data
    tight = Tiers(intact=0, cut=1, cut_bytes=context.tiers.cut_bytes)
    shorter = context.but(results=list(context.results), tiers=tight)
    if not compact_into(shorter):
        return None
    return replace(parts, context_data=shorter.but(tiers=context.tiers))
