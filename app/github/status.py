"""The status comment: one per run, created once and edited in place (SPEC GH4, W4).

It shows the graph with the current node marked, the status and stage, visits against budgets, the
budget used, the missions with links to their job logs, and what a person must do now — in the words of
the comment commands, so the next step is one reply away. Each mission shows capability → role → agent → model
as the local journey does (SPEC W2), ``fallback`` where no role named an agent and the job ran the workflow's
``agent`` input, so a plan that meant a small model and got the default shows it.
"""

from __future__ import annotations

from app.engine.anchor import Anchor
from app.engine.decision import refusal_text
from app.engine.graph.cost_bound import counted, worst_case
from app.engine.graph.mermaid import draw_mermaid
from app.engine.graph.model import END, Graph
from app.engine.kinds import MissionKind
from app.engine.record import FINAL, MissionSummary, Run, Status
from app.engine.team import Team

MARKER = "<!-- interlock:status run={run_id} -->"
HELD_TEAM, HELD_BY = "held_team", "held_by"  # the run's links while its team is stopped (SPEC H4)
PROGRESS = (
    "Progress mission by mission is on the run's `Interlock` check run; this comment changes when a person has "
    "something to do."
)
HELD_NOW = "**Held with its team**: a writer's `/interlock team start` resumes every held run of the team."

NEXT_STEP = {
    Status.GATE_WAIT: "**Review the pull request**: approve it to go on, or request changes to amend this step.",
    Status.AWAITING_INPUT: "**Answer the questions** above with `/interlock answer <your answer>`.",
    Status.AWAITING_UPSTREAM: "**Waiting for the upstream request**; the run resumes by itself when it is done.",
    Status.AWAITING_MERGE: "**Review and merge the pull request**: the run is done when it is merged.",
    Status.ESCALATED: "**Decide**: read the decision file below, then `/interlock resume`, "
    "`/interlock route <verdict>`, `/interlock deliver` or `/interlock abandon`.",
    Status.FAILED: "**A mission failed**: read the decision file below, then `/interlock resume` or "
    "`/interlock abandon`.",
    Status.INTERRUPTED: "**Stopped on request**: `/interlock resume` continues where it stopped.",
    Status.RUNNING: "Nothing: the run is working. `/interlock stop` stops it at the next step.",
}


def render_status(
    run: Run,
    graph: Graph,
    job_urls: dict[int, str] | None = None,
    roster: Team | None = None,
    progress_on_check: bool = True,
    anchor: Anchor | None = None,
) -> str:
    """The comment's body; ``roster`` is the roster of the run's team (``None``: the implicit team, no roles);
    ``progress_on_check``: the run's check run shows each mission (not when the installation may not write checks);
    ``anchor``: the head of the run's chain as the comment was edited, a second witness beside the check (SPEC J6)."""
    lines = [MARKER.format(run_id=run.id), f"### Interlock run `{run.id}` — {run.status.value}", ""]
    lines += _header_lines(run, graph)
    held = run.links.get(HELD_TEAM) if run.status not in FINAL else None
    if held:
        lines += [
            f"**Held**: team `{held}` was stopped by @{run.links.get(HELD_BY, '?')}; the run stops at its next "
            "transition and dispatches no new mission.",
            "",
        ]
    now = HELD_NOW if held else NEXT_STEP.get(run.status, "Nothing: the run is over.")
    lines += [f"**Now**: {now}", ""]
    if run.status is Status.RUNNING and not held and progress_on_check:  # not edited while the run works on
        lines += [PROGRESS, ""]
    lines += ["```mermaid", draw_mermaid(graph, run.stage, run.visits).rstrip(), "```", ""]
    lines += _mission_rows(run, graph, job_urls, roster)
    lines += ["", *anchor.lines()] if anchor is not None else []
    return "\n".join(lines) + "\n"


def _header_lines(run: Run, graph: Graph) -> list[str]:
    """Where the run is (team, graph, stage, branches), what it spent against its worst case (SPEC G7), and why
    it stopped, if it did."""
    stage = "the end" if run.stage == END else f"`{run.stage}`"
    team = f"**Team** `{run.team}` · " if run.team else ""  # none for the implicit team: as before teams
    lines = [f"{team}**Graph** `{run.graph}` · **stage** {stage} · **branch** `{run.branch}` → `{run.base}`"]
    ledger = run.ledger
    budget = [counted(ledger.attempts, "attempt"), counted(ledger.calls, "call"), counted(ledger.units, "unit")]
    limits = run.policy
    if limits.max_calls:
        budget[1] += f" of {limits.max_calls}"
    worst = worst_case(graph, run.policy, run.advisor).text()  # SPEC G7
    lines += [f"**Budget used** {', '.join(budget)} · **accepted** {ledger.accepted} · **worst case** {worst}", ""]
    if run.reason is not None:
        lines += [f"**Stopped**: `{run.reason.code.value}` at `{run.reason.stage}` — {run.reason.message}", ""]
        lines += [refused, ""] if (refused := refusal_text(run, comment=True)) else []
    return lines


def _mission_rows(run: Run, graph: Graph, job_urls: dict[int, str] | None, roster: Team | None) -> list[str]:
    """The table of the run's missions, each with who did it and a link to its job's log where one is known."""
    if not run.missions:
        return []
    urls = {**{int(k.split(":", 1)[1]): v for k, v in run.links.items() if k.startswith("job:")}, **(job_urls or {})}
    lines = [
        "| # | stage | kind | visit | status | verdict | capability → role → agent → model | log |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mission in run.missions:
        status = mission.status.value if mission.status else "running"
        log = f"[job]({urls[mission.seq]})" if mission.seq in urls else ""
        lines.append(
            f"| {mission.seq} | {mission.stage} | {mission.kind.value} | {mission.visit} | {status} | "
            f"{mission.verdict or ''} | {done_by(mission, graph, roster)} | {log} |"
        )
    return lines


def done_by(mission: MissionSummary, graph: Graph, team: Team | None) -> str:
    """capability → role → agent → model of one mission (SPEC W2): the role the team gives the node's capability
    (as the order named it), the agent that ran (the role's while the job runs; ``fallback`` when no role named
    one, so the job ran the workflow's ``agent`` input) and the model (the one asked, when the run used another)."""
    if mission.kind is MissionKind.CHECK:
        return "the node's check command"
    role = None
    parts: list[str] = []
    if mission.kind not in (MissionKind.DECIDE, MissionKind.ADVISOR) and graph.has_stage(mission.stage):
        capability = graph.node(mission.stage).capability
        role = team.assignee(capability) if team is not None else None
        parts = [capability, role.name if role is not None else "no role"]
    if role is not None and role.agent:
        agent = mission.agent or role.agent
    else:
        agent = f"{mission.agent} (fallback)" if mission.agent else "fallback"
    asked = role.model if role is not None else None
    if mission.model and asked and mission.model != asked:
        model = f"{mission.model} (asked {asked})"
    else:
        model = mission.model or (f"{asked} (not reported)" if asked and mission.status else asked) or "agent's default"
    return " → ".join([*parts, agent, model])
