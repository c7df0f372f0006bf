"""The board index of a repository's state branch: ``board.json`` (one row per run) and ``board.md`` rendered from it.

Why here, in the store: both files are saved in the same commit as every transition, built on the very head the
record was read at (the state branch moves by compare-and-swap of the whole branch, so a concurrent save of another
run makes this one re-read and re-apply: no row is ever lost). That makes ``board.md`` cost no API call of its own.

``board.json`` also keeps the number of the repository's pinned board issue and the claim of whoever is creating it
(``app/webhooks/board/pinned.py``): a transition carries them over unchanged. The rows are bounded: every live run,
plus the ``FINISHED_KEPT`` most recently updated runs that ended (``done``, ``cancelled``).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, ValidationError

from app.engine.graph.model import END
from app.engine.record import FINAL, Run
from app.store.journal import BOARD_INDEX_PATH, BOARD_PATH, encode_json

BOARD_MD_PATH = BOARD_PATH
FINISHED_KEPT = 20  # ended runs kept on the board, newest first; live runs are always kept


class BoardRow(BaseModel):
    """What the board shows of one run; ``issue`` is the number of its issue in this repository (0: none)."""

    run: str
    issue: int = 0
    title: str = ""
    team: str = ""
    graph: str = ""
    stage: str = ""
    status: str = ""
    started: str = ""
    updated: str = ""
    cost_usd: float = 0.0
    missions: int = 0

    @property
    def live(self) -> bool:
        return self.status not in {status.value for status in FINAL}


class BoardIndex(BaseModel):
    """``board.json``: the rows, the pinned issue's number (0: not made yet), the claim of its maker, why it could
    not be pinned, if it could not, and whether a person closed it."""

    issue: int = 0
    claim: str = ""
    claimed_at: str = ""
    pin_problem: str = ""  # why the issue could not be pinned ("": pinned)
    closed: bool = False  # a person closed the issue: it is not edited, nor made again, until reopened
    rows: list[BoardRow] = Field(default_factory=list)


def read_index(data: bytes | str | None) -> BoardIndex:
    """The index as stored; an absent or unreadable one reads as empty. It is a view rebuilt by the transitions,
    never a source of truth: a hand-edited file must not stop the runs (the board issue is found again by its label)."""
    if data is None:
        return BoardIndex()
    try:
        return BoardIndex.model_validate_json(data)
    except ValidationError:
        return BoardIndex()


def row_of(run: Run) -> BoardRow:
    issue = run.links.get("issue", "")
    return BoardRow(
        run=run.id,
        issue=int(issue) if issue.isdigit() else 0,
        title=run.request.title,
        team=run.team,
        graph=run.graph,
        stage="end" if run.stage == END else run.stage,
        status=run.status.value,
        started=run.created_at.isoformat(),
        updated=run.updated_at.isoformat(),
        cost_usd=round(run.ledger.spent_usd(), 4),
        missions=run.mission_count,
    )


def with_run(index: BoardIndex, run: Run) -> BoardIndex:
    """``index`` with ``run``'s row in place of its old one; live rows first, oldest start first, then the ended
    ones, latest update first, at most ``FINISHED_KEPT`` of them."""
    rows = [row for row in index.rows if row.run != run.id] + [row_of(run)]
    live = sorted((row for row in rows if row.live), key=lambda row: (row.started, row.run))
    ended = sorted((row for row in rows if not row.live), key=lambda row: (row.updated, row.run), reverse=True)
    return index.model_copy(update={"rows": live + ended[:FINISHED_KEPT]})


def encode_index(index: BoardIndex) -> bytes:
    return encode_json(index.model_dump(mode="json"))


def render_markdown(index: BoardIndex) -> str:
    """``board.md``: every row of the index as a table, readable on the branch and with ``git show``."""
    lines = [
        "# Interlock board",
        "",
        f"{sum(row.live for row in index.rows)} live, {sum(not row.live for row in index.rows)} ended "
        f"(the last {FINISHED_KEPT} ended runs are kept).",
        "",
        "| run | issue | team | graph | stage | status | started | updated | missions | cost (USD) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in index.rows:
        issue = f"#{row.issue}" if row.issue else ""
        lines.append(
            f"| {row.run} | {issue} | {row.team or '(default)'} | {row.graph} | {row.stage} | {row.status} | "
            f"{minute(row.started)} | {minute(row.updated)} | {row.missions} | {row.cost_usd:.2f} |"
        )
    return "\n".join(lines) + "\n"


def minute(moment: str) -> str:
    """An ISO time to the minute, in UTC as stored: ``2026-12-01 21:43``."""
    try:
        return datetime.fromisoformat(moment).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return moment


def board_files(before: bytes | str | None, run: Run) -> tuple[BoardIndex, dict[str, bytes]]:
    """The index after ``run``'s transition, and the two files that save it, from the index read at the same head."""
    index = with_run(read_index(before), run)
    return index, {BOARD_INDEX_PATH: encode_index(index), BOARD_MD_PATH: render_markdown(index).encode("utf-8")}
