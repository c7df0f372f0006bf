"""The decision file posted when a run stops and a person must choose (SPEC E2, E3).

It is rendered from the record alone (plus the git state the shell supplies), so that the person reads
the same facts the engine acted on: the objective, the path, where the judges disagreed, the state of
the delivery, alerts, and each option with the exact command that chooses it. The recommendation is
computed by fixed rules, never by a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.context import cut_utf8
from app.engine.events import GitState
from app.engine.graph.model import FAIL, PASS, Graph
from app.engine.raises import suggested_raise
from app.engine.record import Hop, ReasonCode, Run, Status
from app.engine.rules import SINCE, Change

WHY_BYTES = 600
RAISE = "raise budget"


@dataclass(frozen=True)
class Option:
    name: str
    cli: str
    comment: str
    meaning: str


def decision_options(run: Run, graph: Graph) -> list[Option]:
    """The choices of SPEC E3, with the CLI command and the issue comment that make each."""
    stage = run.stage
    options = _resume_options(run, graph)
    refused = refused_hop(run)
    options += route_options(run, graph, stage, refused is not None)
    if refused is not None:
        options += route_options(run, graph, refused.stage, False, at=True)
    return [*options, *raise_options(run), *_ending_options(run)]


def _resume_options(run: Run, graph: Graph) -> list[Option]:
    """Resume where the run stopped, or at any other stage of the graph."""
    stage = run.stage
    here = Option(
        "resume", f"interlock resume {run.id}", "/interlock resume", f"re-enter `{stage}` with visit budgets re-armed"
    )
    return [here] + [
        Option(
            f"resume at {other}",
            f"interlock resume {run.id} --at {other}",
            f"/interlock resume at {other}",
            f"re-enter the graph at `{other}`",
        )
        for other in (node.stage for node in graph.nodes if node.stage != stage)
    ]


def _ending_options(run: Run) -> list[Option]:
    """End the run by hand: deliver what the branch has, or abandon it."""
    return [
        Option(
            "deliver",
            f"interlock deliver {run.id}",
            "/interlock deliver",
            "go to the end: mark the pull request ready for a person to review and merge",
        ),
        Option(
            "abandon",
            f"interlock abandon {run.id}",
            "/interlock abandon",
            "cancel the run; the branch stays for reference",
        ),
    ]


def route_options(run: Run, graph: Graph, stage: str, unrun: bool, at: bool = False) -> list[Option]:
    """``route LABEL`` for each label of ``stage``; ``unrun``: the stage the run stands at did not run (its visit
    was refused), so a route passes it as if it had answered; ``at``: a route from ``stage``, named (``--at``)."""
    if not graph.has_stage(stage):
        return []
    targets = {edge.verdict: edge.target for edge in graph.outgoing(stage)}
    options = []
    for label in graph.labels(stage):
        to = f" to `{targets[label]}`" if label in targets else ""
        if at:
            name, cli, comment = f"route {label} at {stage}", f" {label} --at {stage}", f" {label} at {stage}"
            meaning = f"route from `{stage}` as if it had answered `{label}`: follow its edge{to}, budgets re-armed"
        else:
            name, cli, comment = f"route {label}", f" {label}", f" {label}"
            meaning = f"pass `{stage}` as if it had answered `{label}`: follow its edge{to}" if unrun else ""
        meaning = (meaning or f"follow the `{label}` edge of `{stage}`") + gate_first(run, graph, stage)
        options.append(Option(name, f"interlock route {run.id}{cli}", f"/interlock route{comment}", meaning))
    return options


def gate_first(run: Run, graph: Graph, stage: str) -> str:
    """What a route past ``stage`` says when the stage has a human gate: from rules 5 it opens the gate, which a
    gatekeeper passes (SPEC H1, H6), unless the run waits at that gate already (the route then passes it)."""
    if run.rules < SINCE[Change.ROUTE_OPENS_GATE] or run.autopilot or run.status is Status.GATE_WAIT:
        return ""
    return f", once a gatekeeper approves the gate of `{stage}`" if graph.node(stage).human_gate else ""


def refused_hop(run: Run) -> Hop | None:
    """The edge into the stage whose visit the budget refused (SPEC B2), when the run stopped on one: the run
    stands at that stage, which did not run, and the hop names the stage whose verdict led there (issue 28). None
    for a record made under rules before 4, whose decisions offered no route from it (kept as recorded, SPEC J6)."""
    reason = run.reason
    if reason is None or reason.code is not ReasonCode.VISIT_BUDGET_EXHAUSTED or not run.path:
        return None
    if run.rules < SINCE[Change.REFUSED_EDGE_OFFERED]:
        return None
    hop = run.path[-1]
    return hop if hop.to == run.stage and hop.stage != run.stage else None


def refusal_text(run: Run, comment: bool = False) -> str:
    """Where the run stands and which stage was refused, and what ``route`` does from each ('' when no visit was
    refused on an edge): said alike by the decision file, ``status`` and the status comment."""
    hop = refused_hop(run)
    if hop is None:
        return ""
    at = f"`/interlock route VERDICT at {hop.stage}`" if comment else f"`route VERDICT --at {hop.stage}`"
    route = "`/interlock route VERDICT`" if comment else "`route VERDICT`"
    return (
        f"The run stands at `{run.stage}`, which did not run: its visit {run.visits.get(run.stage, 0)} was refused "
        f"on the edge `{hop.stage}` → `{hop.to}` ({hop.verdict}). {route} passes `{run.stage}` as if it had "
        f"answered VERDICT; {at} routes from `{hop.stage}` again."
    )


# The stops whose advice depends on no fact beyond their code: (option name, why).
ADVICE_BY_CODE: dict[ReasonCode, tuple[str, str]] = {
    ReasonCode.MISSION_FAILED: (
        "resume",
        "the mission ended abnormally; a fresh attempt is the cheapest way to learn if it was transient",
    ),
    ReasonCode.UPSTREAM_REJECTED: ("abandon", "the upstream project refused the request this run depends on"),
    ReasonCode.UPSTREAM_CYCLE: (
        "abandon",
        "the request would come back to a team waiting in its own chain: do the work here",
    ),
    ReasonCode.UPSTREAM_UNFILEABLE: (
        "resume",
        "GitHub refused the request's issue; once the App can file it there, resume to ask again",
    ),
    ReasonCode.UPSTREAM_NOT_ALLOWED: (
        "resume",
        "the request named a repository outside `upstream:`; resuming re-runs the stage (amend it)",
    ),
}
SPENT = (ReasonCode.ATTEMPT_BUDGET_EXHAUSTED, ReasonCode.CALL_BUDGET_EXHAUSTED, ReasonCode.COST_BUDGET_EXHAUSTED)


def recommend(run: Run, graph: Graph, git: GitState | None) -> tuple[str, str]:
    """(option name, why) by rules: the cheapest choice that the facts support. The branch has work only when
    it changes files against its base: its commits count for nothing when they net to no change, and every
    run branch starts with an empty commit."""
    code = run.reason.code if run.reason else None
    if git.conflicting() if git is not None else bool(run.conflicts):
        return "resume", "the run branch conflicts with its base: resolve the conflicts, then resume"
    if code in ADVICE_BY_CODE:
        return ADVICE_BY_CODE[code]
    if code in (ReasonCode.UNROUTABLE_VERDICT, ReasonCode.INVALID_SELECTION):
        hinted = _label_mentioned(run, graph)
        if hinted:
            return f"route {hinted}", f"the last answer names `{hinted}`, which this stage can route"
        return "resume", "no usable verdict was given; re-run the stage"
    if code is ReasonCode.VISIT_BUDGET_EXHAUSTED:
        return _after_visits(run, git)
    if code in SPENT:
        return _after_spending(run)
    return "resume", "the run was stopped on purpose and can continue as it was"


def _after_visits(run: Run, git: GitState | None) -> tuple[str, str]:
    """A loop ran out of visits: deliver when its last judgement passed on a branch with work, else resume."""
    last = run.missions[-1] if run.missions else None
    passed = last is not None and (last.verdict or "").upper() == PASS
    if passed and git is not None and git.has_work():
        return "deliver", "the last judgement passed and the branch changes files: let a person review it"
    if passed and git is not None:
        return "resume", "the last judgement passed, but the branch changes no file: there is nothing to deliver"
    return "resume", "the loop did not converge; read the judges' findings, amend if needed, then resume"


def _after_spending(run: Run) -> tuple[str, str]:
    """A budget was spent: abandon a run that never had a result accepted, else raise or resume."""
    if run.ledger.accepted == 0:
        return "abandon", "the budget was spent and no result was ever accepted"
    if raise_options(run):
        return RAISE, "results were accepted along the way; a raise goes on where it stopped, paying nothing twice"
    return "resume", "results were accepted along the way; resuming re-arms the budget"


def raise_options(run: Run) -> list[Option]:
    """SPEC P5: a run a limit stopped offers the raise that lifts it (its size again), when a raise can help."""
    held = run.held
    if held is None or not held.limit or run.reason is None or held.stage != run.stage:
        return []
    amount = suggested_raise(run.policy, held.limit)
    meaning = f"raise the limit and make the refused {held.kind.value} call at `{held.stage}`; nothing is paid twice"
    return [Option(RAISE, f"interlock budget {run.id} {amount}", f"/interlock budget {amount}", meaning)]


def render_decision(run: Run, graph: Graph, git: GitState | None = None) -> str:
    reason = run.reason
    lines = [f"# Decision needed: run `{run.id}`", ""]
    if reason is not None:
        lines += [f"**Stopped** at `{reason.stage or run.stage}`: `{reason.code.value}` — {reason.message}", ""]
        lines += [text, ""] if (text := refusal_text(run)) else []
    lines += ["## Objective", "", f"**{run.request.title}**", ""]
    if run.request.body:
        lines += ["> " + line for line in run.request.body.splitlines()] + [""]
    lines += _path_section(run) + _disagreements_section(run) + _git_section(run, git) + _alerts_section(run, git)
    choice, why = recommend(run, graph, git)
    lines += [
        "## Options",
        "",
        "| option | command | comment on the issue | what it does |",
        "| --- | --- | --- | --- |",
    ]
    for option in decision_options(run, graph):
        mark = " **(recommended)**" if option.name == choice else ""
        lines.append(f"| {option.name}{mark} | `{option.cli}` | `{option.comment}` | {option.meaning} |")
    lines += ["", "## Recommendation", "", f"**{choice}** — {why}.", ""]
    return "\n".join(lines)


def _path_section(run: Run) -> list[str]:
    lines = ["## Path taken", ""]
    if not run.path:
        return [*lines, "No edge was followed yet.", ""]
    lines += ["| # | stage | visit | verdict | to | by |", "| --- | --- | --- | --- | --- | --- |"]
    first = run.hop_count - len(run.path) + 1
    if first > 1:
        lines.insert(2, f"({first - 1} earlier hop(s) not shown; the recap and mission records hold them.)\n")
    lines += [
        f"| {i} | {hop.stage} | {hop.visit} | {hop.verdict} | {hop.to} | {hop.by} |"
        for i, hop in enumerate(run.path, first)
    ]
    return [*lines, ""]


def _disagreements_section(run: Run) -> list[str]:
    fails = [m for m in run.missions if m.verdict and m.verdict.upper() == FAIL]
    lines = ["## Disagreements of the judging steps", ""]
    if not fails:
        return [*lines, "None: no step returned FAIL.", ""]
    bodies = {result.seq: result.body for result in run.context.results}
    for mission in fails:
        why = bodies.get(mission.seq, "").strip()
        shown = cut_utf8(why.encode("utf-8"), WHY_BYTES) + ("…" if len(why.encode("utf-8")) > WHY_BYTES else "")
        lines.append(f"- `{mission.stage}` (mission #{mission.seq}, visit {mission.visit}): FAIL")
        lines += ["  > " + line for line in (shown or "(result compacted; see the mission record)").splitlines()]
    return [*lines, ""]


def _git_section(run: Run, git: GitState | None) -> list[str]:
    lines = ["## Delivery", "", f"- branch `{run.branch}` from `{run.base}`"]
    if git is None:
        more = f" and {run.conflict_count - len(run.conflicts)} more" if run.conflict_count > len(run.conflicts) else ""
        named = ", ".join(run.conflicts) + more  # the record keeps the first CONFLICTS_KEPT names (SPEC J5)
        known = [f"- conflicts with base when last read (head `{run.head[:12] or '?'}`): {named}"]
        return [*lines, "- git state not available", *(known if run.conflicts else []), ""]
    files = ", ".join(f"`{name}`" for name in git.files_changed[:20]) or "none"
    more = f" and {len(git.files_changed) - 20} more" if len(git.files_changed) > 20 else ""
    lines += [
        f"- head `{git.head[:12] or '?'}`, {git.ahead} commit(s) ahead of `{run.base}` (the empty start commit too)",
        f"- files changed: {files}{more}",
        f"- conflicts with base: {', '.join(git.conflicts) if git.conflicts else 'none'}",
    ]
    for repo, state in git.satellites:  # SPEC U7: the satellites' run branches are the delivery too
        changed = ", ".join(f"`{name}`" for name in state.files_changed[:20]) or "none"
        lines.append(
            f"- satellite `{repo}`: head `{state.head[:12] or '?'}`, {state.ahead} commit(s) ahead, files changed: "
            f"{changed}, conflicts: {', '.join(state.conflicts) or 'none'}"
        )
    return [*lines, ""]


def _alerts_section(run: Run, git: GitState | None) -> list[str]:
    alerts = []
    if git is not None and git.conflicts:
        alerts.append(f"the branch conflicts with `{run.base}` in {len(git.conflicts)} file(s)")
    elif git is None and run.conflicts:
        alerts.append(f"the branch conflicted with `{run.base}` in {run.conflict_count} file(s) when git was last read")
    if git is not None and not git.has_work():
        alerts.append(f"the branch changes no file against `{run.base}`: no work beyond its empty start commit")
    if run.ledger.accepted == 0 and run.ledger.attempts > 0:
        alerts.append(f"{run.ledger.attempts} attempt(s) made and no result accepted")
    if any(line.estimated for line in run.ledger.by_category.values()):
        alerts.append("some costs are estimates")
    if run.ledger.unknown_costs():
        alerts.append(f"the cost of {run.ledger.unknown_costs()} call(s) is unknown: not counted in the spend")
    over = [f"`{stage}` {count}" for stage, count in run.visits.items() if count > 1]
    if over:
        alerts.append("stages visited more than once: " + ", ".join(over))
    return ["## Alerts", "", *([f"- {alert}" for alert in alerts] or ["None."]), ""]


def _label_mentioned(run: Run, graph: Graph) -> str | None:
    if not graph.has_stage(run.stage) or not run.context.results:
        return None
    text = run.context.results[-1].body.upper()
    return next((label for label in graph.labels(run.stage) if label.upper() in text), None)
