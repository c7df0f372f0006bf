"""The status comment: one per run, created once and edited in place (SPEC GH4, W4).

It shows the graph with the current node marked, the status and stage, visits against budgets, the
budget used, the missions with links to their job logs, and what a person must do now — in the words of
the comment commands, so the next step is one reply away.
"""

from __future__ import annotations

from app.engine.graph import END, Graph
from app.engine.mermaid import draw_mermaid
from app.engine.record import FINAL, Run, Status

MARKER = "<!-- interlock:status run={run_id} -->"
HELD_TEAM, HELD_BY = "held_team", "held_by"  # the run's links while its team is stopped (SPEC H4)
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


def render_status(run: Run, graph: Graph, job_urls: dict[int, str] | None = None) -> str:
    urls = {**{int(k.split(":", 1)[1]): v for k, v in run.links.items() if k.startswith("job:")}, **(job_urls or {})}
    lines = [MARKER.format(run_id=run.id), f"### Interlock run `{run.id}` — {run.status.value}", ""]
    stage = "the end" if run.stage == END else f"`{run.stage}`"
    team = f"**Team** `{run.team}` · " if run.team else ""  # none for the implicit team: as before teams
    lines.append(f"{team}**Graph** `{run.graph}` · **stage** {stage} · **branch** `{run.branch}` → `{run.base}`")
    ledger = run.ledger
    budget = [f"{ledger.attempts} attempts", f"{ledger.calls} calls", f"{ledger.units:g} units"]
    limits = run.policy
    if limits.max_calls:
        budget[1] += f" of {limits.max_calls}"
    lines += [f"**Budget used** {', '.join(budget)} · **accepted** {ledger.accepted}", ""]
    if run.reason is not None:
        lines += [f"**Stopped**: `{run.reason.code.value}` at `{run.reason.stage}` — {run.reason.message}", ""]
    held = run.links.get(HELD_TEAM) if run.status not in FINAL else None
    if held:
        lines += [
            f"**Held**: team `{held}` was stopped by @{run.links.get(HELD_BY, '?')}; the run stops at its next "
            "transition and dispatches no new mission.",
            "",
        ]
    now = HELD_NOW if held else NEXT_STEP.get(run.status, "Nothing: the run is over.")
    lines += [f"**Now**: {now}", ""]
    lines += ["```mermaid", draw_mermaid(graph, run.stage, run.visits).rstrip(), "```", ""]
    if run.missions:
        lines += [
            "| # | stage | kind | visit | status | verdict | log |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for mission in run.missions:
            status = mission.status.value if mission.status else "running"
            log = f"[job]({urls[mission.seq]})" if mission.seq in urls else ""
            lines.append(
                f"| {mission.seq} | {mission.stage} | {mission.kind.value} | {mission.visit} | {status} | "
                f"{mission.verdict or ''} | {log} |"
            )
    return "\n".join(lines) + "\n"
