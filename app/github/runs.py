"""The GitHub shell: runs driven by webhook deliveries, journaled on the repository's state branch.

Each delivery becomes one engine event whose idempotency key is the delivery id, applied with
compare-and-swap on the state branch (a conflict re-reads and re-applies), then the effects are carried
out with the installation's token: missions dispatched as ``workflow_dispatch`` jobs on the run branch,
gates as pull-request reviews, messages as issue comments, the status comment edited in place.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from app.engine.effects import (
    AskAdvisor,
    AskDecision,
    DispatchMission,
    Effect,
    EmitEvent,
    Escalate,
    FileRequest,
    Finish,
    OpenGate,
    OpenPullRequest,
    PostMessage,
    ReadyPullRequest,
)
from app.engine.errors import InterlockError, RunNotFound, VersionConflict
from app.engine.events import Event, Linked, Start
from app.engine.graph import Graph
from app.engine.record import FINAL, Run, Status
from app.engine.step import step
from app.engine.validate import validate_graph
from app.github.client import GitHubApp, GitHubError
from app.github.config import CONFIG_PATH, RepoConfig, parse_config
from app.github.status import render_status
from app.graphset import find_graph
from app.runner.orders import mission_order
from app.store.github import GitHubStore
from app.store.journal import decision_path, encode_json, order_path

MAX_RETRIES = 10
RUNNING_LABEL = "interlock:running"  # on the issue while its run is live; interlock:done or :cancelled after
UPSTREAM_MARKER = "<!-- interlock:upstream run={run_id} repo={repo} -->"
CONFIG_TTL_S = 60.0
CONFIG_CACHE: dict[str, tuple[float, RepoConfig]] = {}
GRAPH_CACHE: dict[str, Graph] = {}
GRAPH_PATH = "runs/{run_id}/graph.json"
log = logging.getLogger("interlock.github")


def run_id_for(issue: int) -> str:
    return f"issue-{issue}"


class GitHubRuns:
    def __init__(
        self, app: GitHubApp, installation: int, repo: str, default_branch: str, library: list[Path] | None = None
    ) -> None:
        self.api = app.installation(installation)
        self.repo = repo
        self.default_branch = default_branch
        self.library = library or []
        self.store = GitHubStore(self.api, repo)
        self._config: RepoConfig | None = None

    def config(self) -> RepoConfig:
        """The repository's configuration from its default branch, kept for ``CONFIG_TTL_S`` per process."""
        if self._config is None:
            cached = CONFIG_CACHE.get(self.repo)
            if cached is not None and time.monotonic() - cached[0] < CONFIG_TTL_S:
                self._config = cached[1]
            else:
                self._config = parse_config(self.api.file(self.repo, CONFIG_PATH, self.default_branch))
                CONFIG_CACHE[self.repo] = (time.monotonic(), self._config)
        return self._config

    def graph_named(self, name: str) -> tuple[Graph | None, list[str]]:
        """The graph from the repository's graphsets, else the bundled library; with its errors (SPEC G6)."""
        for folder in self.config().graphsets:
            raw = self.api.file(self.repo, f"{folder.rstrip('/')}/{name}.json", self.default_branch)
            if raw is not None:
                try:
                    outcome = validate_graph(json.loads(raw))
                except ValueError as exc:
                    return None, [f"{folder}/{name}.json is not JSON: {exc}"]
                return outcome.graph, [f"`{i.code}`: {i.message}" for i in outcome.errors]
        try:
            return find_graph(name, self.library), []
        except InterlockError as exc:
            return None, [str(exc)]

    def start(self, issue: int, title: str, body: str, graph: Graph, key: str, at: datetime, by: str) -> Run:
        """A new run for an issue (SPEC GH1, GH2): run branch with an empty start commit, then the entry."""
        config = self.config()
        run_id = run_id_for(issue)
        branch = f"interlock/{run_id}"
        self._create_run_branch(branch, config.base, title)
        comment = self.api.comment(self.repo, issue, f"Interlock is starting run `{run_id}` on `{graph.name}`…")
        event = Start(
            key=key,
            at=at,
            by=by,
            run_id=run_id,
            title=title,
            body=body,
            origin=f"{self.repo}#{issue}",
            branch=branch,
            base=config.base,
            policy=config.policy,
            autopilot=config.autopilot,
            advisor=bool(config.advisor),
            links={"issue": str(issue), "status_comment": str(comment)},
        )
        run, effects = step(None, event, graph)
        files = {GRAPH_PATH.format(run_id=run_id): encode_json(graph.to_json()), **self._files(run, effects)}
        self.store.save(run, None, files, message=f"interlock: start run {run_id} on {graph.name}")
        self.api.add_labels(self.repo, issue, [RUNNING_LABEL])
        return self.execute(run, graph, effects)

    def _create_run_branch(self, branch: str, base: str, title: str) -> None:
        head = self.api.ref(self.repo, base)
        if head is None:
            raise InterlockError(
                f"the base branch `{base}` does not exist in {self.repo}: create it, or set `base:` in {CONFIG_PATH}"
            )
        tree = self.api.commit_tree(self.repo, head)
        start = self.api.commit(self.repo, f"interlock: start {branch}\n\n{title}", tree, [head])
        self.api.create_ref(self.repo, branch, start)

    def live_run(self, issue: int) -> Run | None:
        try:
            run = self.store.load(run_id_for(issue))
        except RunNotFound:
            return None
        return run

    def graph_of(self, run: Run) -> Graph:
        """The run's graph, stored beside it at start; cached by content hash, since it never changes."""
        cached = GRAPH_CACHE.get(run.graph_hash)
        if cached is not None:
            return cached
        raw = self.store.read(GRAPH_PATH.format(run_id=run.id))
        if raw is None:
            raise InterlockError(f"run {run.id} has no stored graph")
        outcome = validate_graph(json.loads(raw))
        if outcome.graph is None:
            raise InterlockError(f"the stored graph of run {run.id} is invalid")
        GRAPH_CACHE[run.graph_hash] = outcome.graph
        while len(GRAPH_CACHE) > 256:
            GRAPH_CACHE.pop(next(iter(GRAPH_CACHE)))
        return outcome.graph

    def apply(
        self,
        run_id: str,
        make: Callable[[Run], Event],
        files: dict[str, bytes] | None = None,
        also: tuple[str, ...] = (),
    ) -> Run:
        """One event with compare-and-swap; on a conflict re-read and re-apply (SPEC J2). ``also`` names files
        of the state branch the event needs, read with the record in the same call."""
        run, graph, effects, applied = self.record(run_id, make, files, also)
        if not applied:  # already applied: a redelivery; make sure its effects happened (SPEC GH8)
            return self.reconcile(run, graph)
        return self.execute(run, graph, effects)

    def record(
        self,
        run_id: str,
        make: Callable[[Run], Event],
        files: dict[str, bytes] | None = None,
        also: tuple[str, ...] = (),
    ) -> tuple[Run, Graph, list[Effect], bool]:
        """The transition saved, effects not yet carried out: (run, graph, effects, whether it was new)."""
        graph: Graph | None = None
        for _ in range(MAX_RETRIES):
            current = self.store.load(run_id, also)
            graph = graph or self.graph_of(current)
            run, effects = step(current, make(current), graph)
            if run is current:
                return run, graph, [], False
            try:
                self.store.save(run, current.version, {**(files or {}), **self._files(run, effects)})
            except VersionConflict:
                continue
            return run, graph, effects, True
        raise InterlockError(f"run {run_id}: gave up after {MAX_RETRIES} conflicting writes")

    def _files(self, run: Run, effects: list[Effect]) -> dict[str, bytes]:
        """Files saved with the transition: the decision file of an escalation, and the order of each
        mission or call it dispatches (read by the job, ``app/runner``). An advisor's order names the
        advisor configured now, so the job runs what the default branch says, never the run branch."""
        files = {decision_path(run.id): e.decision.encode() for e in effects if isinstance(e, Escalate)}
        for effect in effects:
            if isinstance(effect, DispatchMission | AskDecision | AskAdvisor):
                agent = self.config().advisor if isinstance(effect, AskAdvisor) else None
                files[order_path(run.id, effect.seq, effect.stage)] = encode_json(mission_order(effect, agent))
        return files

    def execute(self, run: Run, graph: Graph, effects: list[Effect]) -> Run:
        """Carry out the effects, then edit the status comment once."""
        jobs: dict[int, str] = {}
        issue = int(run.links.get("issue", "0"))
        for effect in effects:
            if isinstance(effect, DispatchMission | AskDecision | AskAdvisor):
                capability = effect.capability if isinstance(effect, DispatchMission) else "default"
                run_url = self._dispatch(run, effect.seq, capability)
                if run_url:
                    jobs[effect.seq] = run_url
            elif isinstance(effect, OpenPullRequest):
                run = self._open_pull(run, draft=True)
            elif isinstance(effect, ReadyPullRequest):
                run = self._ready_pull(run)
            elif isinstance(effect, OpenGate):
                self._request_review(run)
            elif isinstance(effect, PostMessage) and effect.kind in ("gate", "question", "upstream", "autopilot"):
                self.api.comment(self.repo, issue, effect.text)
            elif isinstance(effect, Escalate):
                self.api.comment(self.repo, issue, effect.decision)
            elif isinstance(effect, FileRequest):
                self._file_request(run, effect, issue)
            elif isinstance(effect, EmitEvent):
                self.api.repository_dispatch(self.repo, effect.name, {"run": run.id, "stage": effect.stage})
            elif isinstance(effect, Finish) and issue:
                self.api.remove_label(self.repo, issue, RUNNING_LABEL)
                self.api.add_labels(self.repo, issue, [f"interlock:{effect.status.value}"])
        self._edit_status(run, graph, jobs)
        return run

    def reconcile(self, run: Run, graph: Graph) -> Run:
        """Carry out what the record says must exist, for effects that may have failed after their transition
        was saved: the job of the awaited mission, the gate's pull request, the ready pull request at the end,
        the status comment. Only redeliveries pay for these checks."""
        jobs: dict[int, str] = {}
        waiting = run.waiting
        if run.status is Status.RUNNING and waiting is not None and not self._has_job(run, waiting.seq):
            node = graph.node(waiting.stage) if graph.has_stage(waiting.stage) else None
            url = self._dispatch(run, waiting.seq, node.capability if node else "default")
            if url:
                jobs[waiting.seq] = url
        elif run.status is Status.GATE_WAIT and "pr" not in run.links:
            run = self._open_pull(run, draft=True)
            self._request_review(run)
        elif run.status is Status.AWAITING_MERGE and "pr" not in run.links:
            run = self._ready_pull(run)
        self._edit_status(run, graph, jobs)
        return run

    def has_other_job(self, title: str, branch: str) -> bool:
        """Whether more than one dispatched job carries this title (a duplicate the concurrency group cancelled)."""
        return sum(t == title for t in self.api.dispatched_titles(self.repo, branch)) > 1

    def _has_job(self, run: Run, seq: int) -> bool:
        title = f"interlock {run.id} mission {seq} "
        return any(t.startswith(title) for t in self.api.dispatched_titles(self.repo, run.branch))

    def _dispatch(self, run: Run, seq: int, capability: str) -> str | None:
        """A ``workflow_dispatch`` of the mission workflow on the run branch (SPEC GH3), on the capability's
        runners. The workflow that runs is the base branch's: the job that pushes refuses any agent commit
        that touches ``.github/workflows/`` (``app/runner/job.py``)."""
        summary = run.mission(seq)
        stage = summary.stage if summary else run.stage
        inputs = {"run": run.id, "mission": str(seq), "stage": stage, "runner": self.config().runs_on(capability)}
        workflow_run = self.api.dispatch(self.repo, self.config().workflow, run.branch, inputs)
        return f"https://github.com/{self.repo}/actions/runs/{workflow_run}" if workflow_run else None

    def _open_pull(self, run: Run, draft: bool) -> Run:
        if "pr" in run.links:
            return run
        title = f"{run.request.title} (Interlock run {run.id})"
        body = f"Run `{run.id}` for #{run.links.get('issue', '?')}. Merging is a person's decision."
        created = self.api.create_pull(self.repo, run.branch, run.base, title, body, draft)
        links = {"pr": str(created["number"]), "pr_node": created["node_id"]}
        return self.record(run.id, lambda r: Linked(key=f"{r.id}/pr", at=r.updated_at, links=links))[0]

    def _ready_pull(self, run: Run) -> Run:
        if "pr" not in run.links:
            return self._open_pull(run, draft=False)
        self.api.mark_ready(run.links["pr_node"])
        return run

    def _request_review(self, run: Run) -> None:
        if "pr" in run.links:
            self.api.request_reviewers(self.repo, int(run.links["pr"]), self.config().gatekeepers)

    def _file_request(self, run: Run, effect: FileRequest, issue: int) -> None:
        """File the request upstream (SPEC U3), marked so that its closing resumes this run by itself."""
        marker = UPSTREAM_MARKER.format(run_id=run.id, repo=self.repo)
        body = f"{effect.body}\n\n_Filed by Interlock for run `{run.id}` of {self.repo}#{issue}._\n{marker}"
        try:
            created = self.api.create_issue(effect.target, effect.title, body)
            note = f"Filed the upstream request {created['url'] or effect.target} for this run."
        except GitHubError as exc:
            note = f"Could not file the request in `{effect.target}` ({exc.status}): please file it by hand."
        self.api.comment(self.repo, issue, note)

    def _edit_status(self, run: Run, graph: Graph, jobs: dict[int, str]) -> None:
        comment = run.links.get("status_comment")
        if comment:
            self.api.edit_comment(self.repo, int(comment), render_status(run, graph, jobs))

    def is_live(self, run: Run) -> bool:
        return run.status not in FINAL
