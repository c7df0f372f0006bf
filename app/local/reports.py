"""What people see of runs (SPEC W1–W3): the board, a run's journey, its money, its status.

Each report is rows of plain data first (what ``--json`` prints, with the record's field names), then a
table rendered from the rows, so the two never disagree.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from app.engine.graph import END, Graph
from app.engine.record import Run
from app.store.journal import JournalStore


def board_rows(runs: list[Run], now: datetime | None = None) -> list[dict[str, Any]]:
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
            "updated_at": run.updated_at.isoformat(),
        }
        for run in sorted(runs, key=lambda r: r.created_at)
    ]


def journey_rows(run: Run, store: JournalStore) -> list[dict[str, Any]]:
    """Every mission, from the full records stored beside the run; summaries fill in what is in flight."""
    rows: dict[int, dict[str, Any]] = {}
    for path in store.list_files(f"runs/{run.id}/missions/"):
        data = store.read(path)
        if data is None:
            continue
        record = json.loads(data)
        rows[record["seq"]] = {
            key: record.get(key) for key in ("seq", "kind", "stage", "status", "agent", "model", "duration_s", "usage")
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
    return [rows[seq] for seq in sorted(rows)]


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
    flat = [
        {
            **row,
            "calls": (row.get("usage") or {}).get("calls", ""),
            "cost_usd": _money(
                (row.get("usage") or {}).get("cost_usd", 0.0), (row.get("usage") or {}).get("estimated", False)
            ),
            "duration_s": f"{row['duration_s']:.1f}" if row.get("duration_s") is not None else "",
        }
        for row in rows
    ]
    return table(
        flat,
        ["seq", "kind", "stage", "visit", "status", "verdict", "agent", "model", "duration_s", "calls", "cost_usd"],
    )


def render_money(rows: list[dict[str, Any]]) -> str:
    shown = [
        {
            **row,
            "cost_usd": _money(row["cost_usd"], row["estimated"]),
            "units": f"{row['units']:g}",
            "seconds": f"{row['seconds']:.1f}",
        }
        for row in rows
    ]
    text = table(
        shown,
        ["category", "attempts", "calls", "units", "accepted", "input_tokens", "output_tokens", "cost_usd", "seconds"],
    )
    if any(row["estimated"] for row in rows):
        text += "\n(~ marks estimates reported by agents, not measured spend)"
    return text


def render_status(run: Run, graph: Graph | None) -> str:
    lines = [
        f"run {run.id} — {run.request.title}",
        f"  graph    {run.graph} ({run.graph_hash[:19]})",
        f"  status   {run.status.value} at {run.stage}",
        f"  branch   {run.branch} (from {run.base})",
    ]
    if graph is not None:
        visits = ", ".join(f"{n.stage} {run.visits.get(n.stage, 0)}/{n.max_visits}" for n in graph.nodes)
        lines.append(f"  visits   {visits}")
    if run.reason:
        lines.append(f"  reason   {run.reason.code.value}: {run.reason.message}")
    if run.gate:
        lines.append(f"  gate     {run.gate.stage} on {run.gate.verdict} since {run.gate.opened_at:%Y-%m-%d %H:%M}")
    ledger = run.ledger
    lines.append(
        f"  budget   {ledger.attempts} attempts, {ledger.calls} calls, {ledger.units:g} units, "
        f"{ledger.accepted} accepted"
    )
    lines += launch_lines(run)
    if run.recap:
        lines.append(f"  path     {run.recap}{' → end' if run.stage == END else ''}")
    lines.append(f"  next     {next_step(run)}")
    return "\n".join(lines)


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


def next_step(run: Run) -> str:
    """What a person must do now, if anything."""
    hints = {
        "gate_wait": f"interlock approve {run.id} [--note T]  or  interlock amend {run.id} --note T",
        "awaiting_input": f"interlock answer {run.id} --text T",
        "awaiting_upstream": f"file the request upstream; then interlock resume {run.id}",
        "awaiting_merge": f"review and merge {run.branch} into {run.base}",
        "escalated": f"read runs/{run.id}/decision.md on interlock/state; then resume, route, deliver or abandon",
        "failed": f"read runs/{run.id}/decision.md on interlock/state; then interlock resume {run.id}",
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


def _money(value: float, estimated: bool) -> str:
    return f"{'~' if estimated else ''}${value:.4f}"
