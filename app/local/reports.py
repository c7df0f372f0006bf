"""What people see of runs (SPEC W1–W3): the board, a run's journey, its money, its status.

Each report is rows of plain data first (what ``--json`` prints, with the record's field names), then a
table rendered from the rows, so the two never disagree.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from textwrap import wrap
from typing import Any

from app.engine.cost_source import merged_sources, sources_text
from app.engine.decision import refusal_text
from app.engine.graph.cost_bound import counted
from app.engine.graph.model import END, Graph
from app.engine.record import MissionKind, Run, Status
from app.store.journal import STATE_BRANCH, FileReader, decision_path, mission_path, missions_folder

RECORD_FIELDS = ("seq", "kind", "stage", "status", "agent", "model", "duration_s", "usage")
# Who was meant to do a mission and how its whitelist was kept (SPEC U1, W2); absent from older journals.
ASSIGNMENT_FIELDS = ("capability", "role", "model_asked", "tools", "tool_scope")
SCREEN_MAX = 40  # lines of an answer shown at a gate: a screenful, and never more than this
DECISION_KIND = "decision"  # a journey row that is a decision, not a mission
NOT_ANSWERS = (MissionKind.REASK, MissionKind.DECIDE, MissionKind.ADVISOR)  # their text is a label, not the work


def board_rows(
    runs: list[Run], now: datetime | None = None, runners: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """One row per run; ``runners`` says who drives each (``live (pid N)``, ``stopped``, ``none``)."""
    moment = now or datetime.now(UTC)
    return [
        {
            "id": run.id,
            "graph": run.graph,
            "origin": run.request.origin or "local",
            "title": run.request.title,
            "stage": run.stage,
            "status": run.status.value,
            "age_s": int((moment - run.created_at).total_seconds()),
            "missions": run.mission_count,
            "runner": (runners or {}).get(run.id, "none"),
            "updated_at": run.updated_at.isoformat(),
        }
        for run in sorted(runs, key=lambda r: r.created_at)
    ]


def stored_record(data: bytes | None) -> dict[str, Any]:
    """A mission record of the journal, ``{}`` when there is none or it is no JSON object: the journal is a branch
    anyone with the repository can rewrite, and a view of it never ends in an internal error (issue 11, 10)."""
    try:
        record = json.loads(data) if data is not None else {}
    except (ValueError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def journey_rows(run: Run, store: FileReader) -> list[dict[str, Any]]:
    """Every mission, from the full records stored beside the run (summaries fill in what is in flight), and
    each decision handed to a person (``kind: decision``), placed after the missions that came before it."""
    rows: dict[int, dict[str, Any]] = {}
    for path in store.list_files(missions_folder(run.id)):
        record = stored_record(store.read(path))
        if not isinstance(record.get("seq"), int):
            continue  # unreadable: the run's own summary of the mission shows instead
        rows[record["seq"]] = {
            **{key: record.get(key) for key in RECORD_FIELDS},
            **{key: record[key] for key in ASSIGNMENT_FIELDS if record.get(key) is not None},
        }
    for summary in run.missions:
        row = rows.setdefault(summary.seq, {})
        row.update(
            {
                k: v
                for k, v in summary.json_data().items()
                if k in ("seq", "kind", "stage", "visit", "status", "verdict", "agent", "model", "duration_s", "usage")
                and (v is not None or k not in row)
            }
        )
    decisions = decision_rows(run)
    ordered: list[dict[str, Any]] = []
    for seq in sorted(rows):
        ordered += [d for d in decisions if d["after_mission"] < seq and d not in ordered]
        ordered.append(rows[seq])
    return ordered + [d for d in decisions if d not in ordered]


def journey_text(run: Run, store: FileReader, routing: bool, as_json: bool) -> str:
    """``interlock journey``: the missions and decisions, or with ``routing`` every routing line (SPEC C3)."""
    from app.runner.routing_log import render_routing, routing_json, routing_log

    if routing:
        log = routing_log(store, run)
        return json.dumps(routing_json(log), indent=2) if as_json else render_routing(log)
    rows = journey_rows(run, store)
    return json.dumps(rows, indent=2) if as_json else render_journey(rows)


def decision_rows(run: Run) -> list[dict[str, Any]]:
    """The decisions the record keeps (SPEC E2, E3): why, what was offered and recommended, and the option a
    person took, by whom and when (``choice`` null while the run still waits)."""
    return [{"kind": DECISION_KIND, **decision.json_data()} for decision in run.decisions]


def render_decisions(rows: list[dict[str, Any]]) -> str:
    """The decisions of a journey, each with its outcome: who chose which option and when."""
    shown = [
        {
            **row,
            "taken": row["taken"] or "(waiting for a person)",
            "asked_at": _moment(row["asked_at"]),
            "decided_at": _moment(row["decided_at"]),
        }
        for row in rows
    ]
    columns = ["number", "stage", "reason", "recommended", "taken", "by", "asked_at", "decided_at"]
    return "decisions:\n" + table(shown, columns)


def _moment(value: str | None) -> str:
    """A journal time as people read it: to the second, UTC."""
    return datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if value else ""


def money_rows(run: Run) -> list[dict[str, Any]]:
    rows = [{"category": str(category), **line.json_data()} for category, line in run.ledger.by_category.items()]
    total = run.ledger
    rows.append(
        {
            "category": "total",
            "attempts": total.attempts,
            "calls": total.calls,
            "units": total.units,
            "accepted": total.accepted,
            "input_tokens": sum(r["input_tokens"] for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
            "cost_usd": sum(r["cost_usd"] for r in rows),
            "seconds": sum(r["seconds"] for r in rows),
            "estimated": any(r["estimated"] for r in rows),
            "unknown_costs": sum(r["unknown_costs"] for r in rows),
            "sources": merged_sources(rows),
            "prices_as_of": max((r.get("prices_as_of", "") for r in rows), default=""),
        }
    )
    return rows


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain-text table (Markdown-compatible), readable in a terminal and in a GitHub comment."""
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max([len(column), *(len(line[i]) for line in cells)]) for i, column in enumerate(columns)]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |",
        "| " + " | ".join("-" * w for w in widths) + " |",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |" for line in cells]
    return "\n".join(lines)


def render_journey(rows: list[dict[str, Any]]) -> str:
    decisions = [row for row in rows if row.get("kind") == DECISION_KIND]
    missions = render_missions([row for row in rows if row.get("kind") != DECISION_KIND])
    return f"{missions}\n\n{render_decisions(decisions)}" if decisions else missions


def render_missions(rows: list[dict[str, Any]]) -> str:
    flat = [
        {
            **row,
            "calls": (row.get("usage") or {}).get("calls", ""),
            "cost_usd": _usage_money(row.get("usage") or {}),
            "duration_s": f"{row['duration_s']:.1f}" if row.get("duration_s") is not None else "",
            "capability → role → agent → model": done_by(row),
            "tools": tools_cell(row),
        }
        for row in rows
    ]
    columns = ["seq", "kind", "stage", "visit", "status", "verdict", "capability → role → agent → model"]
    return table(flat, [*columns, "tools", "duration_s", "calls", "cost_usd"])


def done_by(row: Mapping[str, Any]) -> str:
    """capability → role → agent → model of a journey row (SPEC W2). A mission no role carried says
    ``no role``; a model the agent used other than the one the role asked for shows both, so a plan that meant
    a small model and got another shows it; a call with no capability (a decision, advice) starts at its agent."""
    if row.get("kind") == MissionKind.CHECK.value:
        return "the node's check command"
    used, asked = row.get("model"), row.get("model_asked")
    if used and asked and used != asked:
        model = f"{used} (asked {asked})"
    else:
        model = used or (f"{asked} (not reported)" if asked else "agent's default")
    parts = [str(row.get("agent") or "?"), model]
    if row.get("capability"):
        parts = [str(row["capability"]), str(row.get("role") or "no role"), *parts]
    return " → ".join(parts)


def tools_cell(row: Mapping[str, Any]) -> str:
    """The role's whitelist and whether the agent enforced it: ``enforced``, ``partly`` or ``not enforced``
    (the flags themselves are in ``--json``'s ``tool_scope``)."""
    tools = row.get("tools") or []
    if not tools:
        return ""
    scope = str(row.get("tool_scope") or "").split(":", 1)[0] or "not recorded"
    return f"{', '.join(map(str, tools))} ({scope})"


def render_money(rows: list[dict[str, Any]]) -> str:
    shown = [
        {
            **row,
            "cost_usd": _money(row["cost_usd"], row["estimated"], row["unknown_costs"]),
            "units": f"{row['units']:g}",
            "seconds": f"{row['seconds']:.1f}",
            "cost_source": sources_text(row.get("sources", {}), row.get("prices_as_of", "")),
        }
        for row in rows
    ]
    columns = ["category", "attempts", "calls", "units", "accepted", "input_tokens", "output_tokens", "cost_usd"]
    text = table(shown, [*columns, "seconds", "cost_source"])
    return text + _money_notes(rows)


def money_report(run: Run) -> str:
    """``interlock money``: the ledger by category and, under it, each raise of the run's limits (SPEC P5)."""
    text = render_money(money_rows(run))
    if not run.ledger.raises:
        return text
    rows = [
        {"at": f"{r.at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC", "by": r.by, "stage": r.stage, "raised": r.text()}
        for r in run.ledger.raises
    ]
    earlier = run.ledger.raise_count - len(rows)
    more = f"\n({earlier} earlier raise(s) not kept in the record)" if earlier > 0 else ""
    return f"{text}\n\nbudget raises:\n{table(rows, ['at', 'by', 'stage', 'raised'])}{more}"


def _money_notes(rows: list[dict[str, Any]]) -> str:
    notes = ""
    if any(row["estimated"] for row in rows):
        notes += "\n(~ marks estimates: tokens times a price table, or an agent's guess; not measured spend)"
    if any(row["unknown_costs"] for row in rows):
        notes += "\n(unknown: a model with no price; give it one under `prices:` in the configuration)"
    return notes


def screen_lines() -> int:
    """How many lines of an answer fit on the terminal beside the status around them (at most SCREEN_MAX)."""
    return max(10, min(SCREEN_MAX, shutil.get_terminal_size((100, SCREEN_MAX + 8)).lines - 8))


def gate_answer(run: Run, store: FileReader, lines: int = SCREEN_MAX) -> dict[str, Any] | None:
    """The answer a gate asks a person to approve, cut to ``lines``, and the command that shows all of it.

    That is the answer of the node's own mission: a gate opened after a re-ask or a decision points at that
    call, whose text is only a label, so the newest mission of the gate's stage that did the work is shown.
    """
    gate = run.gate
    if gate is None:
        return None
    worked = [
        m.seq for m in run.missions if m.stage == gate.stage and m.seq <= gate.mission and m.kind not in NOT_ANSWERS
    ]
    seq = max(worked, default=gate.mission)
    path = mission_path(run.id, seq, gate.stage)
    data = store.read(path)
    answer = str(stored_record(data).get("answer") or "")
    every = answer.splitlines()
    return {
        "mission": seq,
        "stage": gate.stage,
        "path": path,
        "command": f"git show {STATE_BRANCH}:{located(store, path)}",
        "stored": data is not None,
        "lines": len(every),
        "excerpt": "\n".join(every[:lines]),
    }


def located(store: FileReader, path: str) -> str:
    """Where a file lies on the state branch: a store that knows the run's layout says (v2 buckets the files,
    ``app/store/layout.py``); any other keeps files where their logical path says."""
    where = getattr(store, "located", None)
    return str(where(path)) if callable(where) else path


def render_gate_answer(view: dict[str, Any]) -> str:
    """The answer at a gate as a person reads it before approving: excerpt, what was cut, where the rest is."""
    if not view["stored"]:
        return f"the answer of mission #{view['mission']} is not stored yet ({view['command']})"
    shown = view["excerpt"].count("\n") + 1 if view["excerpt"] else 0
    parts = [f"answer of mission #{view['mission']} at {view['stage']}:", view["excerpt"] or "(empty)"]
    if view["lines"] > shown:
        parts.append(f"[… {view['lines'] - shown} more lines]")
    parts.append(f"full answer: {view['command']}")
    return "\n".join(parts)


def render_status(
    run: Run, graph: Graph | None, runner: str | None = None, gate_answer: dict[str, Any] | None = None
) -> str:
    lines = [
        f"run {run.id} — {run.request.title}",
        f"  graph    {run.graph} ({run.graph_hash[:19]})",
        f"  status   {run.status.value} at {run.stage}",
        f"  branch   {run.branch} (from {run.base})",
    ]
    if runner is not None and runner != "none":
        lines.append(f"  runner   {runner}{': nobody drives the run any more' if runner == 'stopped' else ''}")
    if graph is not None:
        visits = ", ".join(f"{n.stage} {run.visits.get(n.stage, 0)}/{n.max_visits}" for n in graph.nodes)
        lines.append(f"  visits   {visits}")
    if run.reason:  # a failed mission's message carries its output, on lines of their own
        first, *more = f"{run.reason.code.value}: {run.reason.message}".splitlines() or [""]
        lines += [f"  reason   {first}", *(f"           {line}" if line else "" for line in more)]
        lines += [f"           {line}" for line in wrap(refusal_text(run), 100)]  # a refused visit (issue 28)
    if run.gate:
        lines.append(f"  gate     {run.gate.stage} on {run.gate.verdict} since {run.gate.opened_at:%Y-%m-%d %H:%M}")
        if gate_answer is not None:
            lines += _indented(render_gate_answer(gate_answer))
    if run.status is Status.AWAITING_INPUT and run.questions:
        lines.append(f"  questions from {run.stage}:")
        lines += _indented(run.questions)
    ledger = run.ledger
    estimated = any(line.estimated for line in ledger.by_category.values())
    lines.append(
        f"  budget   {counted(ledger.attempts, 'attempt')}, {counted(ledger.calls, 'call')}, "
        f"{counted(ledger.units, 'unit')}, "
        f"{ledger.accepted} accepted, {_money(ledger.spent_usd(), estimated, ledger.unknown_costs())} spent"
    )
    lines += launch_lines(run)
    if run.recap:
        lines.append(f"  path     {run.recap}{' → end' if run.stage == END else ''}")
    lines.append(f"  next     {next_step(run, runner)}")
    return "\n".join(lines)


def _indented(text: str) -> list[str]:
    return [f"    {line}" if line else "" for line in text.splitlines()]


def launch_lines(run: Run) -> list[str]:
    """The agents the run goes on with, and where that came from: its launch and the last override."""
    launch = run.relaunches[-1] if run.relaunches else run.launch
    if launch is None:
        return []
    default = launch.agents.get("default")
    others = [f"{name} {spec}" for name, spec in launch.agents.items() if name != "default" and spec != default]
    agents = "; ".join([*([f"default {default}"] if default else []), *others]) or "none"
    source = f"config {launch.config_file} (sha256 {str(launch.config_sha256)[:12]}), " if launch.config_file else ""
    origin = f"{source}gates {launch.gates or 'ask on a terminal, else stop'}"
    if run.relaunches:
        origin += f"; set by `{launch.command}` ({', '.join(launch.changed)}) at {launch.at:%Y-%m-%d %H:%M}"
    return [f"  agents   {agents}", f"  launch   {origin}"]


def next_step(run: Run, runner: str | None = None) -> str:
    """What a person must do now, if anything."""
    if run.status is Status.RUNNING and runner == "stopped":
        return f"the runner stopped; `interlock resume {run.id}`"
    if run.status is Status.RUNNING and run.stop_requested:
        return "nothing: a stop was asked; the run stops when its current mission returns"
    hints = {
        "gate_wait": f"interlock approve {run.id} [--note T]  or  interlock amend {run.id} --note T",
        "awaiting_input": f"interlock answer {run.id} --text T",
        "awaiting_upstream": f"file the request upstream; then interlock resume {run.id}",
        "awaiting_merge": f"review and merge {run.branch} into {run.base}; status then records the run done",
        "escalated": f"read {decision_path(run.id)} on {STATE_BRANCH}; then resume, route, deliver or abandon",
        "failed": f"read {decision_path(run.id)} on {STATE_BRANCH}; then interlock resume {run.id}",
        "interrupted": f"interlock resume {run.id}",
        "running": "nothing: the run is working",
    }
    return hints.get(run.status.value, "nothing: the run is over")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _money(value: float | None, estimated: bool, unknown: int = 0) -> str:
    """A cost as people should read it: ``~`` for an estimate, ``unknown`` where a cost was not known —
    never a bare $0 for what nobody measured."""
    if value is None or (unknown and not value):
        return "unknown"
    known = f"{'~' if estimated else ''}${value:.4f}"
    return f"{known} + unknown" if unknown else known


def _usage_money(usage: dict[str, Any]) -> str:
    return _money(usage.get("cost_usd", 0.0), bool(usage.get("estimated")))
