"""The base check on loopback (SPEC V9, GH6): the real service, real `interlock step` jobs and the stand-in GitHub
over a real bare repository. While the run works, someone pushes a conflicting commit to `develop`; the review's
`deliver` job reads the delivery's git state (it fetched the run branch and the base anyway) and stores it in the
mission record; the service routes on CONFLICT to the resolve step when the review has that edge, else escalates
with `base_conflict` and the conflicting file in the decision comment — the pull request is never marked ready
on a conflicting base, and no API call is added to find out."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_loop import Loop, Service, bare_origin, git, labeled_by_alice, stand_in
from tests.github.git_github import Loopback

AGENT = r"""
import os, pathlib, sys
sys.stdin.read()
stage = os.environ["INTERLOCK_STAGE"]
if stage == "build":
    pathlib.Path("feature.txt").write_text("feature, from the run\n")
elif stage == "resolve":
    pathlib.Path("feature.txt").write_text("feature, from develop\n")  # takes the base's side
print("VERDICT: PASS")
"""


def graph(conflict_edge: bool) -> dict[str, object]:
    nodes = [{"stage": "build", "capability": "coding"}, {"stage": "review", "capability": "review"}]
    edges = [
        {"from": "build", "verdict": "PASS", "to": "review"},
        {"from": "review", "verdict": "PASS", "to": "__end__"},
    ]
    if conflict_edge:
        nodes.append({"stage": "resolve", "capability": "coding"})
        edges += [
            {"from": "review", "verdict": "CONFLICT", "to": "resolve"},
            {"from": "resolve", "verdict": "PASS", "to": "review"},
        ]
    return {"name": "loop", "entry": "build", "nodes": nodes, "edges": edges}


def push(origin: Path, work: Path, branch: str, files: dict[str, str], message: str) -> None:
    """A person's commit pushed to ``branch`` of the origin."""
    if not work.exists():
        subprocess.run(["git", "clone", "--quiet", "-b", branch, str(origin), str(work)], check=True)
    git(work, "checkout", "--quiet", branch)
    git(work, "pull", "--quiet", "origin", branch)
    for name, text in files.items():
        (work / name).write_text(text)
    git(work, "add", "--all")
    git(work, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "--quiet", "-m", message)
    git(work, "push", "--quiet", "origin", branch)


@pytest.fixture(params=[True, False], ids=["conflict-edge", "no-edge"])
def conflicted(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Loop, bool]]:
    origin = bare_origin(tmp_path)
    spec = json.dumps(graph(request.param))
    push(origin, tmp_path / "person", "main", {".github/interlock/graphs/loop.json": spec}, "graph")
    fake = stand_in(origin)
    with Loopback(fake) as server:
        (tmp_path / "logs").mkdir()
        service = Service(server.url, tmp_path / "logs")
        service.start()
        try:
            loop = Loop(tmp_path, fake, service, origin)
            loop.agent.write_text(AGENT)
            yield loop, request.param
        finally:
            service.stop()


def test_a_conflicting_base_routes_on_conflict_or_escalates_naming_the_file(conflicted: tuple[Loop, bool]) -> None:
    # SPEC V9, GH6, E2
    loop, conflict_edge = conflicted
    labeled = labeled_by_alice()
    issue = labeled["issue"]["number"]
    run_id = f"issue-{issue}"
    assert loop.service.deliver("issues", labeled)["outcome"] == "handled"
    loop.run_job(loop.pending_jobs()[0])  # build writes feature.txt
    push(loop.origin, loop.tmp / "person", "develop", {"feature.txt": "feature, from develop\n"}, "meanwhile")
    loop.run_job(loop.pending_jobs()[0])  # review passes; its deliver job reads the conflict
    record = loop.record(run_id)
    review = json.loads(git(loop.origin, "show", f"interlock/state:runs/{run_id}/missions/0000/0002-review.json"))
    assert review["git"]["conflicts"] == ["feature.txt"]
    if conflict_edge:
        assert record["status"] == "running" and record["stage"] == "resolve"
        assert record["path"][-1] == {**record["path"][-1], "stage": "review", "verdict": "CONFLICT", "to": "resolve"}
        assert not loop.fake.pulls  # nothing proposed on a conflicting base
        for stage in ("resolve", "review"):
            (job,) = loop.pending_jobs()
            assert job["stage"] == stage
            loop.run_job(job)
        assert loop.record(run_id)["status"] == "awaiting_merge"
        (pull,) = loop.fake.pulls.values()
        assert pull["draft"] is False  # ready once the base no longer conflicts
    else:
        assert record["status"] == "escalated" and record["reason"]["code"] == "base_conflict"
        assert "feature.txt" in record["reason"]["message"]
        comments = [c["body"] for c in loop.fake.comments.values() if c["body"].startswith("# Decision needed")]
        assert len(comments) == 1 and "- conflicts with base: feature.txt" in comments[0]
        assert "`base_conflict`" in comments[0]
        assert all(pull["draft"] for pull in loop.fake.pulls.values())
    assert loop.fake.problems == []
