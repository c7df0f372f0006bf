"""The advisor on loopback (SPEC E4): the real service, real `interlock step` jobs and the stand-in GitHub over
a real bare repository. `advisor:` in `.github/interlock.yml`; the first mission fails → the service dispatches
the advisor's job, which runs the configured advisor → its `revise` is applied: the retried mission gets the
instruction in its prompt and succeeds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_loop import Loop, Service, bare_origin, git, labeled_by_alice, stand_in
from tests.github.git_github import Loopback

MISSION_AGENT = r"""
import os, pathlib, sys
prompt = sys.stdin.read()
if os.environ["INTERLOCK_MISSION"] == "1":
    print("Traceback: disk full"); sys.exit(1)
if "Advisor's instruction: Write revised into feature.txt." in prompt:
    pathlib.Path("feature.txt").write_text("revised\n")
print("VERDICT: PASS")
"""
ADVISOR = r"""
import sys
question = sys.stdin.read()
assert "Traceback: disk full" in question
print("revise\nWrite revised into feature.txt.")
"""


def configure_advisor(tmp_path: Path, origin: Path) -> None:
    """Add `advisor:` to the repository's configuration on its default branch."""
    advisor = tmp_path / "advisor.py"
    advisor.write_text(ADVISOR)
    work = tmp_path / "configure"
    subprocess.run(["git", "clone", "--quiet", "-b", "main", str(origin), str(work)], check=True)
    config = work / ".github" / "interlock.yml"
    spec = json.dumps(f"command:{sys.executable} {advisor}")
    config.write_text(config.read_text() + f"advisor: {spec}\n")
    git(work, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "--quiet", "-am", "advisor")
    git(work, "push", "--quiet", "origin", "main")


@pytest.fixture
def advised(tmp_path: Path) -> Iterator[Loop]:
    origin = bare_origin(tmp_path)
    configure_advisor(tmp_path, origin)
    fake = stand_in(origin)
    with Loopback(fake) as server:
        (tmp_path / "logs").mkdir()
        service = Service(server.url, tmp_path / "logs")
        service.start()
        try:
            loop = Loop(tmp_path, fake, service, origin)
            loop.agent.write_text(MISSION_AGENT)
            yield loop
        finally:
            service.stop()


def test_a_failed_mission_asks_the_advisor_in_a_job_and_its_answer_applies(advised: Loop) -> None:
    # SPEC E4, P3, GH3
    labeled = labeled_by_alice()
    issue = labeled["issue"]["number"]
    run_id, branch = f"issue-{issue}", f"interlock/issue-{issue}"
    assert advised.service.deliver("issues", labeled)["outcome"] == "handled"
    assert advised.record(run_id)["advisor"] is True
    advised.run_job(advised.pending_jobs()[0])  # build fails
    (advice,) = advised.pending_jobs()
    assert (advice["mission"], advice["stage"]) == ("2", "build")
    advised.run_job(advice)  # the advisor's job: revise, with an instruction
    (retry,) = advised.pending_jobs()
    advised.run_job(retry)  # build again, told what to do
    record = advised.record(run_id)
    missions = [(m["seq"], m["kind"], m["status"], m["verdict"]) for m in record["missions"]]
    assert missions[:3] == [
        (1, "deliver", "failed", None),
        (2, "advisor", "done", "revise"),
        (3, "retry", "done", "PASS"),
    ]
    assert record["stage"] == "review" and record["ledger"]["by_category"]["advisor"]["calls"] == 1
    assert git(advised.origin, "show", f"{branch}:feature.txt") == "revised"
    stored = json.loads(git(advised.origin, "show", f"interlock/state:runs/{run_id}/missions/0000/0002-build.json"))
    assert stored["kind"] == "advisor" and stored["commits"] == 0
    assert advised.fake.problems == []
