"""Supervision on GitHub (SPEC U6): a team that sets ``onRunEnd: <graph>`` supervises the runs of the other teams.
When one ends (a final status), the App opens an issue "Supervision of run <id>" labelled ``team:<supervisor>``,
its body the finished run's journal — path, verdicts, ledger, decision file — bounded and redacted, and starts a
run of the supervising team on that graph through the trigger's own start path, so the team's queue, the one live
run per issue and the redelivery of a start all hold as for a person's label.

One supervision per ended run and supervising team: the issue it opened is recorded on the state branch
(``supervisions/<run>--<team>.json``) before the start, and the start's delivery id is derived from the same
pair, so a redelivered end finds both and starts nothing twice. A supervision run's own end supervises nothing,
and a team never supervises its own runs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Protocol
from uuid import uuid4

from app.engine.citation import FORMS
from app.engine.context import cut_utf8, fence
from app.engine.errors import VersionConflict
from app.engine.record import MissionSummary, Run
from app.github.client import RefConflict
from app.github.teams import TEAM_LABEL, TeamSettings
from app.store.github import GitHubStore
from app.store.journal import STATE_BRANCH, decision_path, missions_folder, record_path
from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome
from app.webhooks.shell import GitHubRuns

CONTEXT_BYTES = 12_000  # the journal a supervision run starts with: bounded like a record (SPEC J5)
DECISION_BYTES = 4_000
ATTEMPTS = 5
CLAIM_SECONDS = 300  # an intent to open an issue older than this: its opener stopped before it opened one


class Starter(Protocol):
    """What supervision needs of the webhook handlers: the trigger label's start path, and the App's name."""

    app_slug: str | None

    def issue_labeled(self, delivery: Delivery) -> Outcome: ...


def supervise(handlers: Starter, runs: GitHubRuns, ended: Run) -> None:
    """Start a supervision of ``ended`` for every other team that sets ``onRunEnd``; nothing for a live run or
    a supervision run."""
    if runs.is_live(ended) or ended.supervision:
        return
    own = runs.team_of(ended).name
    supervisors = [team for team in runs.teams() if team.on_run_end is not None and team.name != own]
    context = journal_context(runs, ended) if supervisors else ""
    for team in supervisors:
        issue = supervision_issue(runs, team, ended, context)
        handlers.issue_labeled(start_delivery(handlers, runs, team, ended, (issue, context)))


def supervision_key(ended: Run, team: TeamSettings) -> str:
    return f"supervision-{ended.id}--{team.name}"


def supervision_issue(runs: GitHubRuns, team: TeamSettings, ended: Run, context: str) -> int:
    """The issue that supervises ``ended`` for ``team``: the one recorded on the state branch, else the one
    opened (``_open``), its number then recorded with compare-and-swap (retried alone when the branch moved)."""
    path = f"supervisions/{ended.id}--{team.name}.json"
    opened: int | None = None
    for _ in range(ATTEMPTS):
        head = runs.api.ref(runs.repo, STATE_BRANCH)
        data = runs.api.file(runs.repo, path, head) if head else None
        recorded = json.loads(data).get("issue") if data is not None else None
        if recorded is not None:  # recorded by an earlier delivery (or, at the same time, by another one)
            return int(recorded)
        if opened is None:
            opened = _open(runs, team, ended, context, path)
            continue  # the intent moved the branch
        try:
            _record(runs, path, opened, ended, head)
        except RefConflict:
            continue
        return opened
    raise VersionConflict(path, None, None)  # the delivery fails; its redelivery tries again


def supervision_marker(ended: Run, team: TeamSettings) -> str:
    return f"<!-- interlock:supervision run={ended.id} team={team.name} -->"


def _open(runs: GitHubRuns, team: TeamSettings, ended: Run, context: str, path: str) -> int:
    """The supervision issue, opened once among replicas and redeliveries (SPEC GH8): the intent to open it is
    written first, with compare-and-swap, so only the delivery that wrote it opens at once. Any other finds the
    intent and looks for the issue by its marker (its opener may have stopped before recording it); finding
    none, it fails (its redelivery comes back), unless the intent is older than ``CLAIM_SECONDS``: its opener
    stopped before opening, and this delivery takes the intent over."""
    label, marker = f"{TEAM_LABEL}{team.name}", supervision_marker(ended, team)
    store, message = GitHubStore(runs.api, runs.repo), f"interlock: opening the supervision of run {ended.id}"
    mine = {"run": ended.id, "opening": uuid4().hex, "at": datetime.now(UTC).isoformat()}
    intent = store.write_json_cas(path, lambda current: current or mine, message)
    if intent != mine:
        found = int(intent["issue"]) if "issue" in intent else _marked(runs, label, marker)
        if found is not None:
            return found
        taken = _stale(intent) and store.write_json_cas(path, lambda now: mine if now == intent else now, message)
        if taken != mine:
            raise VersionConflict(path, None, None)  # another delivery is opening it: the redelivery finds it
    body = f"{context}\n\n{marker}"
    return int(runs.api.create_issue(runs.repo, f"Supervision of run {ended.id}", body, [label])["number"])


def _marked(runs: GitHubRuns, label: str, marker: str) -> int | None:
    found = [issue for issue in runs.api.issues_labelled(runs.repo, label) if marker in str(issue.get("body") or "")]
    return min(int(issue["number"]) for issue in found) if found else None


def _stale(intent: dict[str, object]) -> bool:
    try:
        at = datetime.fromisoformat(str(intent.get("at")))
    except ValueError:
        return True
    return (datetime.now(UTC) - at).total_seconds() > CLAIM_SECONDS


def _record(runs: GitHubRuns, path: str, issue: int, ended: Run, head: str | None) -> None:
    text = json.dumps({"issue": issue, "run": ended.id}, indent=1) + "\n"
    entry = {"path": path, "mode": "100644", "type": "blob", "content": text}
    tree = runs.api.tree(runs.repo, [entry], runs.api.commit_tree(runs.repo, head) if head else None)
    commit = runs.api.commit(runs.repo, f"interlock: supervision of run {ended.id}", tree, [head] if head else [])
    if head is None:
        runs.api.create_ref(runs.repo, STATE_BRANCH, commit)
    else:
        runs.api.update_ref(runs.repo, STATE_BRANCH, commit)


def start_delivery(
    handlers: Starter, runs: GitHubRuns, team: TeamSettings, ended: Run, issue: tuple[int, str]
) -> Delivery:
    """The trigger label, put by the App on the supervision issue: a delivery the label's start path takes
    (a ``team:`` label and a ``graph:`` label choose the team and its ``onRunEnd`` graph)."""
    config = runs.config()
    labels = [f"{TEAM_LABEL}{team.name}", f"{config.graph_label_prefix}{team.on_run_end}"]
    payload = {
        "action": "labeled",
        "label": {"name": config.trigger_label},
        "installation": {"id": runs.installation},
        "repository": {"full_name": runs.repo, "default_branch": runs.default_branch},
        "sender": {"login": f"{handlers.app_slug}[bot]", "type": "Bot"},
        "issue": {
            "number": issue[0],
            "title": f"Supervision of run {ended.id}",
            "body": issue[1],
            "labels": [{"name": name} for name in labels],
            "updated_at": ended.updated_at.isoformat(),
        },
    }
    return Delivery("issues", supervision_key(ended, team), payload)


def journal_context(runs: GitHubRuns, ended: Run) -> str:
    """The finished run's journal as the supervision run reads it: path, verdicts, ledger and decision file,
    redacted and cut to ``CONTEXT_BYTES`` (the whole stays on the state branch, where it names them)."""
    head = runs.api.ref(runs.repo, ended.branch)
    reason = f"{ended.reason.code.value}: {ended.reason.message}" if ended.reason else "none"
    lines = [
        f"Interlock opened this issue to supervise run `{ended.id}` of team `{runs.team_of(ended).name}`, which "
        f"ended `{ended.status.value}` (reason: {reason}). Its journal is on the branch `{STATE_BRANCH}`: "
        f"`{record_path(ended.id)}`, its missions in `{missions_folder(ended.id)}`.",
        f"Request: {ended.request.title} ({ended.request.origin}); graph `{ended.graph}`; branch `{ended.branch}` "
        f"at commit `{head or 'gone'}`, base `{ended.base}`.",
        "",
        "## Path",
        *[f"- {hop.stage} (visit {hop.visit}): {hop.verdict} → {hop.to} (by {hop.by})" for hop in ended.path],
        "",
        "## Verdicts",
        *[_mission_line(ended, mission) for mission in ended.missions],
        "",
        "## Ledger",
        *_ledger_lines(ended),
        "",
        *_decision_lines(runs, ended),
        "## Filing a request",
        f"Each request this run files must cite a measured finding, one per line of its body: {FORMS}.",
    ]
    raw = runs.api.redactor.text("\n".join(lines)).encode("utf-8")
    cut = f"\n[… cut by Interlock: the whole journal is in {record_path(ended.id)} …]"
    return raw.decode("utf-8") if len(raw) <= CONTEXT_BYTES else cut_utf8(raw, CONTEXT_BYTES) + cut


def _mission_line(run: Run, mission: MissionSummary) -> str:
    status = mission.status.value if mission.status else "in flight"
    cost = "unknown" if mission.usage.cost_usd is None else f"${mission.usage.cost_usd:.4f}"
    who = f"{mission.agent or 'default agent'}/{mission.model or 'default model'}"
    return (
        f"- run {run.id} mission {mission.seq}, {mission.stage} visit {mission.visit} ({mission.kind.value}): "
        f"{status}, verdict {mission.verdict or 'none'}, {who}, {mission.usage.calls} call(s), cost {cost}"
    )


def _ledger_lines(run: Run) -> list[str]:
    ledger = run.ledger
    total = (
        f"- total: {ledger.attempts} attempt(s), {ledger.calls} call(s), {ledger.accepted} accepted, "
        f"${ledger.spent_usd():.4f} known spend, {ledger.unknown_costs()} unknown cost(s)"
    )
    return [total] + [
        f"- {category.value}: {line.attempts} attempt(s), {line.calls} call(s), {line.input_tokens} in / "
        f"{line.output_tokens} out tokens, ${line.cost_usd:.4f}, {line.seconds:.0f} s"
        for category, line in ledger.by_category.items()
    ]


def _decision_lines(runs: GitHubRuns, run: Run) -> list[str]:
    head = runs.api.ref(runs.repo, STATE_BRANCH)  # at the head: the store's snapshot is the handled run's
    stored = runs.api.file(runs.repo, decision_path(run.id), head) if head else None
    if stored is None:
        return [f"No decision file (`{decision_path(run.id)}`): the run wrote none.", ""]
    # redacted whole, then cut: a secret straddling the limit would keep too few characters to be recognised
    shown = runs.api.redactor.text(stored.decode("utf-8", errors="replace")).encode("utf-8")
    text = cut_utf8(shown, DECISION_BYTES) + ("\n[… cut …]" if len(shown) > DECISION_BYTES else "")
    return [f"## Decision file `{decision_path(run.id)}`", fence(text), ""]
