"""The mission workflow's runs that GitHub lists for a run branch, with whether each still lives.

Why: whether a mission's job is alive decides whether a person's resume may dispatch it again (issue 28: never
two jobs for one mission). GitHub says it in each workflow run's ``status``: ``completed`` is the only final one
(``queued``, ``requested``, ``waiting``, ``pending`` and ``in_progress`` will still run or are running), and
``run_started_at`` says when its current attempt began
(https://docs.github.com/en/rest/actions/workflow-runs#list-workflow-runs-for-a-repository). Fields are read
leniently: a run GitHub lists without one is still listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

COMPLETED = "completed"


@dataclass(frozen=True)
class DispatchedRun:
    title: str
    id: int | None
    status: str = ""
    created_at: datetime | None = None
    started_at: datetime | None = None

    @property
    def live(self) -> bool:
        """Still queued or running: GitHub has not ended it (a run listed without a status is taken as live)."""
        return self.status != COMPLETED


def parse_runs(data: Any) -> list[DispatchedRun]:
    """The ``workflow_runs`` of a listing, newest first as GitHub gives them."""
    runs = data.get("workflow_runs", []) if isinstance(data, dict) else []
    return [
        DispatchedRun(
            title=str(run.get("display_title", "")),
            id=run["id"] if isinstance(run.get("id"), int) and not isinstance(run.get("id"), bool) else None,
            status=str(run.get("status") or ""),
            created_at=_moment(run.get("created_at")),
            started_at=_moment(run.get("run_started_at")),
        )
        for run in runs
        if isinstance(run, dict)
    ]


def _moment(value: Any) -> datetime | None:
    """GitHub's ISO 8601 time; one without a zone is taken as UTC (GitHub's times are), anything else None."""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment
