"""The run's check run (SPEC W5): what it shows, and the Checks API calls that put it on the run branch's head.

A check run named ``Interlock`` sits on the head commit of the run branch, which is the head of the run's pull
request once there is one: a run's state is visible where reviewers already look, even if every comment is
hidden. It is ``in_progress`` while the run works and ``completed`` with a conclusion when it stops; a person's
decision offered as buttons (requested actions) where GitHub allows them.

Nothing about it is kept in the run record: like the comments a redelivery finds by their hidden mark
(``app/github/seen.py``), the check is found again on GitHub — the check runs of the branch's head named
``Interlock`` whose ``external_id`` is the run's id — so a redelivery, or a second replica, updates the one
there instead of making a second, and an update whose check already shows the same is skipped.
https://docs.github.com/en/rest/checks/runs
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, assert_never

from githubkit.exception import GraphQLFailed
from pydantic import ValidationError

from app.engine.anchor import Anchor
from app.engine.decision import refusal_text
from app.engine.graph.cost_bound import counted
from app.engine.graph.mermaid import draw_mermaid
from app.engine.graph.model import END, Graph
from app.engine.record import Run, Status
from app.github.calls import in_url
from app.github.client import Installation
from app.github.status import NEXT_STEP
from app.github.web import GITHUB_COM

CHECK_NAME = "Interlock"
CHECK_RUNS = "check-runs"  # the API's folder; never a literal ending in "runs/", which names the journal's
SUMMARY_LIMIT = 65535  # UTF-8 bytes of a check run's output summary GitHub accepts (its docs say characters)
CUT_NOTE = "\n\n… (cut: a check run's summary holds at most 65535 bytes)"


@dataclass(frozen=True)
class Action:
    """A button of the check run: GitHub allows at most 3, a label and identifier of at most 20 characters and a
    description of at most 40. ``command`` is the comment command the click runs, as its clicker."""

    identifier: str
    label: str
    description: str
    command: str


RESUME = Action("resume", "Resume", "Go on from where the run stopped", "/interlock resume")
RETRY = Action("retry", "Retry", "Run the failed step again", "/interlock retry")
DELIVER = Action("deliver", "Deliver", "Deliver what the run has made", "/interlock deliver")
ABANDON = Action("abandon", "Abandon", "Cancel the run for good", "/interlock abandon")
ALL = (RESUME, RETRY, DELIVER, ABANDON)


def offered(status: Status) -> tuple[Action, ...]:
    """The decisions a person can take by a button at ``status``. None at a gate (its decision is the pull
    request's review) or a question (its answer is text, ``/interlock answer``)."""
    match status:
        case Status.ESCALATED:
            return (RESUME, DELIVER, ABANDON)
        case Status.FAILED:
            return (RETRY, ABANDON)
        case Status.INTERRUPTED:
            return (RESUME, ABANDON)
        case (
            Status.RUNNING
            | Status.GATE_WAIT
            | Status.AWAITING_INPUT
            | Status.AWAITING_UPSTREAM
            | Status.AWAITING_MERGE
            | Status.DONE
            | Status.CANCELLED
        ):
            return ()
        case _:
            assert_never(status)


def conclusion_of(status: Status) -> str | None:
    """The check's conclusion at ``status``; ``None``: the run works, the check is in progress."""
    match status:
        case Status.RUNNING | Status.AWAITING_UPSTREAM:
            return None  # nothing for a person to do: an upstream request resumes the run by itself
        case Status.GATE_WAIT | Status.AWAITING_INPUT | Status.INTERRUPTED:
            return "action_required"
        case Status.AWAITING_MERGE | Status.DONE:
            return "success"  # the run's work is done: the pull request awaits its merge, then the run is done
        case Status.FAILED | Status.ESCALATED:
            return "failure"
        case Status.CANCELLED:
            return "cancelled"
        case _:
            assert_never(status)


@dataclass(frozen=True)
class CheckView:
    """What the check run shows: a pure function of the run, so two deliveries agree on it."""

    conclusion: str | None
    title: str
    summary: str
    details_url: str
    actions: tuple[Action, ...]

    @property
    def status(self) -> str:
        return "in_progress" if self.conclusion is None else "completed"

    def fields(self) -> dict[str, Any]:
        """The body of a create or update: a completed check names its conclusion and its buttons."""
        body: dict[str, Any] = {
            "status": self.status,
            "details_url": self.details_url,
            "output": {"title": self.title, "summary": self.summary},
        }
        if self.conclusion is not None:
            body["conclusion"] = self.conclusion
        body["actions"] = [
            {"label": a.label, "identifier": a.identifier, "description": a.description} for a in self.actions
        ]
        return body

    def shown_by(self, found: dict[str, Any]) -> bool:
        """Whether the check run ``found`` (as GitHub lists it) shows this already: then no call is made."""
        output = found.get("output") or {}
        return (
            found.get("status") == self.status
            and found.get("conclusion") == self.conclusion
            and found.get("details_url") == self.details_url
            and output.get("title") == self.title
            and output.get("summary") == self.summary
        )


def check_view(
    run: Run, graph: Graph, repo: str, mask: Callable[[str], str], web: str = GITHUB_COM, anchor: Anchor | None = None
) -> CheckView:
    """The check of ``run``: its stage, visits, budget used and picture; ``mask`` hides secrets (a reason may quote
    an agent's answer). ``anchor``: the head of the run's chain, which only the App can write here (SPEC J6)."""
    stage = "the end" if run.stage == END else f"`{run.stage}`"
    visits = ", ".join(f"`{name}` {count}" for name, count in sorted(run.visits.items())) or "none yet"
    ledger, limits = run.ledger, run.policy
    calls = counted(ledger.calls, "call") + (f" of {limits.max_calls}" if limits.max_calls else "")
    lines = [
        f"**Run** `{run.id}` · **status** {run.status.value} · **graph** `{run.graph}` · **stage** {stage}",
        "",
        f"**Visits** {visits}",
        "",
        f"**Budget used** {counted(ledger.attempts, 'attempt')}, {calls}, {counted(ledger.units, 'unit')} · "
        f"**accepted** {ledger.accepted}",
        "",
    ]
    if run.reason is not None:
        lines += [f"**Stopped**: `{run.reason.code.value}` at `{run.reason.stage}` — {run.reason.message}", ""]
        lines += [refused, ""] if (refused := refusal_text(run, comment=True)) else []
    lines += [f"**Now**: {NEXT_STEP.get(run.status, 'Nothing: the run is over.')}", ""]
    lines += ["```mermaid", draw_mermaid(graph, run.stage, run.visits).rstrip(), "```", ""]
    lines += [*anchor.lines(), ""] if anchor is not None else []
    issue = run.links.get("issue", "")
    details = f"{web}/{repo}/issues/{issue}" if issue else f"{web}/{repo}"
    title = f"{run.status.value} at {run.stage if run.stage != END else 'the end'}"
    summary = fit_summary(mask("\n".join(lines)))
    return CheckView(conclusion_of(run.status), title, summary, details, offered(run.status))


def fit_summary(summary: str) -> str:
    """The summary within GitHub's limit, which counts UTF-8 bytes ("summary exceeds a maximum bytesize of
    65535", https://github.com/github/docs/issues/35252): a reason in another script or with emoji that is under
    65535 characters would be refused (422), and its delivery would fail for ever."""
    data = summary.encode("utf-8")
    if len(data) <= SUMMARY_LIMIT:
        return summary
    room = SUMMARY_LIMIT - len(CUT_NOTE.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + CUT_NOTE  # a character cut in two is left out whole


def checks_at_head(api: Installation, repo: str, branch: str) -> list[dict[str, Any]] | None:
    """The ``Interlock`` check runs of the branch's head commit, newest first; ``None`` when the branch is gone
    (merged and deleted): there is no head to show a check on."""
    data = api.call(
        "GET",
        f"/repos/{repo}/commits/heads/{in_url(branch)}/check-runs",
        params={"check_name": CHECK_NAME, "filter": "all", "per_page": 100},
        missing_ok=True,
    )
    if not isinstance(data, dict):
        return None
    found = [check for check in data.get("check_runs", []) if isinstance(check, dict)]
    return sorted(found, key=lambda check: int(check.get("id") or 0), reverse=True)


HISTORY = 30  # commits of the run branch searched for a check left in progress when its head moved
BRANCH_CHECKS = (
    "query InterlockBranchChecks($owner: String!, $name: String!, $ref: String!) { "
    "repository(owner: $owner, name: $name) { ref(qualifiedName: $ref) { target { ... on Commit { oid "
    f"history(first: {HISTORY}) {{ nodes {{ oid checkSuites(first: 10) {{ nodes {{ checkRuns(first: 10, "
    f'filterBy: {{checkName: "{CHECK_NAME}", status: IN_PROGRESS}}) {{ nodes {{ databaseId externalId }} }} '
    "} } } } } } } } }"
)


def branch_checks(api: Installation, repo: str, branch: str, external_id: str) -> tuple[str | None, list[int]]:
    """The branch's head, and the ids of the ``external_id`` checks still in progress on its last ``HISTORY``
    commits, in one GraphQL call: where the head was before a mission's commits moved it.
    https://docs.github.com/en/graphql/reference/objects#checkrun"""
    owner, name = repo.split("/", 1)
    try:
        data = api.github.graphql(BRANCH_CHECKS, {"owner": owner, "name": name, "ref": f"refs/heads/{branch}"})
    except (GraphQLFailed, ValidationError):  # refused, or no GraphQL answer: a check left behind stays as it was
        return api.ref(repo, branch), []  # the head read the plain way
    target = ((data.get("repository") or {}).get("ref") or {}).get("target")
    if not target:
        return None, []
    found = [
        int(check["databaseId"])
        for commit in (target.get("history") or {}).get("nodes") or []
        for suite in (commit.get("checkSuites") or {}).get("nodes") or []
        for check in (suite.get("checkRuns") or {}).get("nodes") or []
        if check.get("externalId") == external_id and isinstance(check.get("databaseId"), int)
    ]
    return str(target["oid"]), found


def moved_on(view: CheckView, head: str) -> CheckView:
    """What a check left on an earlier commit shows once the run's check went on to ``head``."""
    summary = f"The run branch's head moved to `{head}`: the run's check is there now."
    return CheckView("neutral", f"moved to {head[:7]}", summary, view.details_url, ())


@dataclass(frozen=True)
class MadeCheck:
    """A check run as GitHub made it: its REST id, and its node id, which GraphQL names it by (``""`` unknown)."""

    id: int
    node: str


def create_check(api: Installation, repo: str, head: str, external_id: str, view: CheckView) -> MadeCheck:
    body = {"name": CHECK_NAME, "head_sha": head, "external_id": external_id, **view.fields()}
    made = api.call("POST", f"/repos/{repo}/check-runs", json=body)
    return MadeCheck(int(made["id"]), str(made.get("node_id") or ""))


def update_check(api: Installation, repo: str, check_id: int, view: CheckView) -> None:
    api.call("PATCH", f"/repos/{repo}/{CHECK_RUNS}/{check_id}", json=view.fields())
