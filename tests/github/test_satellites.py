# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Satellite repositories on GitHub (SPEC U7, P4; issue 13 item 7), across three repositories of the stand-in:
the run branch in each satellite, a satellite commit as progress, a pull request per repository with work, each
linking the others, the run done only when all are merged, and ``/interlock deliver owner/name`` for the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.engine.record import Status
from app.webhooks.router import Outcome
from tests.github.test_config_check import TEAMS, check, checkout, findings
from tests.github.test_flows import (  # noqa: F401 - fixture
    REPO,
    World,
    merged_payload,
    retry_waits,
    world,
)
from tests.github.test_team_queue import configure
from tests.helpers import doc

DOCS, WEB = "octo/docs", "octo/web"
TEAM = """base: develop
default_graph: one
teams:
  core:
    satellites: [octo/docs, octo/web]
"""
ONE = {  # one step that must change something, then the end
    "name": "one",
    "entry": "build",
    "nodes": [{"stage": "build", "capability": "coding", "requiresChanges": True}],
    "edges": [{"from": "build", "verdict": "PASS", "to": "__end__"}],
}


def setup(world: World) -> int:
    """The team's file and graph, the two satellites on GitHub, and a labelled issue: its number."""
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/one.json", json.dumps(ONE))
    configure(world, TEAM)
    for repo in (DOCS, WEB):
        world.fake.seed_branch(repo, "main", {"README.md": f"# {repo}"})
    outcome, issue = world.label()
    assert outcome is Outcome.HANDLED
    return issue


def build_done(world: World, issue: int, main: int = 0, docs: int = 1) -> None:
    """The build job's record, as the job stores it: commits on the run branch and in each satellite."""
    if docs:
        world.fake.commit_file(DOCS, f"interlock/issue-{issue}", "guide.md", "# new guide")  # the job's push
    record = {"seq": 1, "stage": "build", "status": "done", "answer": "Done.\nVERDICT: PASS", "commits": main}
    record["satellites"] = {DOCS: {"base": "a" * 40, "head": "b" * 40, "commits": docs}, WEB: {"commits": 0}}
    world.job_done(issue, 1, "build", "", record=json.dumps(record))


def pulls(world: World) -> dict[str, tuple[int, dict[str, Any]]]:
    return {pull["repo"]: (number, pull) for number, pull in world.fake.pulls.items()}


def merged_in(repo: str, number: int, body: str, branch: str) -> dict[str, Any]:
    payload = merged_payload(branch)
    payload["repository"] = {**payload["repository"], "full_name": repo}
    payload["pull_request"] = {**payload["pull_request"], "number": number, "body": body}
    return payload


def test_a_run_records_its_satellites_and_each_gets_its_run_branch(world: World) -> None:
    # SPEC U7: the run branch `interlock/<run-id>` in every satellite, from its default branch
    issue = setup(world)
    run = world.run(issue)
    assert run.satellites == [DOCS, WEB] and run.team == "core"
    for repo in (DOCS, WEB):
        assert world.fake.refs[(repo, run.branch)] == world.fake.refs[(repo, "main")]


def test_a_satellite_commit_counts_as_progress(world: World) -> None:
    # SPEC P4: no commit on the run branch, one in a satellite: requiresChanges is met and the run goes on
    issue = setup(world)
    build_done(world, issue, main=0, docs=1)
    assert world.run(issue).status is Status.AWAITING_MERGE


def test_no_commit_anywhere_is_no_progress(world: World) -> None:
    # SPEC P4: neither the run branch nor a satellite moved: the node is re-entered, a visit spent
    issue = setup(world)
    build_done(world, issue, main=0, docs=0)
    run = world.run(issue)
    assert run.status is Status.RUNNING and run.visits["build"] == 2


def test_each_repository_with_work_gets_its_pull_request_linked_to_the_others(world: World) -> None:
    # SPEC U7: the main pull request and the satellite's, each body naming the other; no work in octo/web, no PR
    issue = setup(world)
    build_done(world, issue)
    found = pulls(world)
    assert set(found) == {REPO, DOCS}
    (main, main_pull), (docs, docs_pull) = found[REPO], found[DOCS]
    assert f"{DOCS}#{docs}" in main_pull["body"] and f"{REPO}#{main}" in docs_pull["body"]
    assert docs_pull["head"] == f"interlock/issue-{issue}" and docs_pull["base"] == "main"
    assert docs_pull["draft"] is False and f"{REPO}#{issue}" in docs_pull["body"]
    assert world.run(issue).links[f"pr:{DOCS}"] == str(docs)


def test_the_run_is_done_only_when_every_pull_request_is_merged(world: World) -> None:
    # SPEC U7: the main merge alone leaves the run awaiting its satellite's; that merge ends it
    issue = setup(world)
    build_done(world, issue)
    (docs, docs_pull) = pulls(world)[DOCS]
    world.deliver("pull_request", merged_payload(f"interlock/issue-{issue}"))
    run = world.run(issue)
    assert run.status is Status.AWAITING_MERGE and run.links[f"landed:{REPO}"].startswith("merged by")
    outcome = world.deliver("pull_request", merged_in(DOCS, docs, docs_pull["body"], f"interlock/issue-{issue}"))
    assert outcome is Outcome.HANDLED and world.run(issue).status is Status.DONE


def test_the_satellite_merged_first_then_the_main_one_ends_the_run(world: World) -> None:
    issue = setup(world)
    build_done(world, issue)
    (docs, docs_pull) = pulls(world)[DOCS]
    world.deliver("pull_request", merged_in(DOCS, docs, docs_pull["body"], f"interlock/issue-{issue}"))
    assert world.run(issue).status is Status.AWAITING_MERGE
    world.deliver("pull_request", merged_payload(f"interlock/issue-{issue}"))
    assert world.run(issue).status is Status.DONE


def test_a_copied_marker_on_another_pull_request_changes_nothing(world: World) -> None:
    # like GH9: only the pull request the run names counts, whatever a body claims
    issue = setup(world)
    build_done(world, issue)
    (docs, docs_pull) = pulls(world)[DOCS]
    world.deliver("pull_request", merged_payload(f"interlock/issue-{issue}"))
    outcome = world.deliver("pull_request", merged_in(DOCS, docs + 50, docs_pull["body"], f"interlock/issue-{issue}"))
    assert outcome is Outcome.IGNORED and world.run(issue).status is Status.AWAITING_MERGE


def test_a_person_delivers_a_satellite_explicitly(world: World) -> None:
    # SPEC U7: `/interlock deliver owner/name` counts that repository's part as landed; all in: done
    issue = setup(world)
    build_done(world, issue)
    world.deliver("pull_request", merged_payload(f"interlock/issue-{issue}"))
    world.comment(issue, f"/interlock deliver {DOCS}")
    run = world.run(issue)
    assert run.status is Status.DONE


def test_delivering_a_repository_that_is_no_satellite_is_refused(world: World) -> None:
    issue = setup(world)
    build_done(world, issue)
    world.comment(issue, "/interlock deliver octo/other,octo/docs")
    said = [c["body"] for c in world.fake.comments.values() if c.get("issue") == issue]
    assert any("`octo/other` is no satellite of this run" in text and "nothing changed" in text for text in said)
    assert f"landed:{DOCS}" not in world.run(issue).links


def test_an_unreadable_satellite_refuses_the_start_and_makes_nothing(world: World) -> None:
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/one.json", json.dumps(ONE))
    configure(world, TEAM)
    world.fake.seed_branch(DOCS, "main", {"README.md": "# docs"})  # octo/web has no default branch to read
    outcome, issue = world.label()
    assert outcome is Outcome.IGNORED and world.runs().store.find(f"issue-{issue}") is None
    assert (REPO, f"interlock/issue-{issue}") not in world.fake.refs
    assert (DOCS, f"interlock/issue-{issue}") not in world.fake.refs
    said = [c["body"] for c in world.fake.comments.values() if c.get("issue") == issue]
    assert any("the satellite repository `octo/web` cannot be read" in text for text in said)


def test_config_check_no_longer_warns_that_satellites_do_nothing(tmp_path: Path) -> None:
    # "every setting does something": satellites are acted on now, so `config check` says nothing of them
    config = TEAMS.replace("defaultGraph: small", "defaultGraph: small\n    satellites: [octo/docs]")
    checkout(tmp_path, config.replace("defaultGraph: nope", "defaultGraph: feature"))
    (tmp_path / "teams/docs/bad.json").unlink()
    result = check("--file", str(tmp_path / ".github/interlock.yml"), "--json")
    assert result.returncode == 0, result.stdout
    assert not [f for f in findings(result) if f["subject"].startswith("teams.core.satellites")]


def test_the_readme_says_how_satellites_work() -> None:
    # every README sentence is checked: the behaviour by the tests of this file, tests/runner/test_satellite_job.py
    # and tests/local/test_satellites.py, the words here
    text = " ".join(doc("github/teams.md", "github/satellites.md").split())
    start = text.index("**Satellite repositories** (SPEC U7, P4).")
    said = text[start:]  # to the end of the satellites page, where "**Checking it**" followed it
    for words in (
        "each satellite gets a run branch `interlock/<run-id>` from its default branch",
        "a satellite the App cannot read refuses the start, and nothing is made",
        "at `../interlock-satellites/<owner>/<name>`, and names them in the agent's prompt",
        "(a fast-forward, no workflow file), with the action's `token`",
        "a new commit in any satellite is progress for `requiresChanges`",
        "the job also reads the delivery's git state and keeps it in the mission record (`git`)",
        "the same for each satellite's run branch against its default branch; a decision file on GitHub shows it",
        "a repository the job cannot read is left out, never failing the mission",
        "each satellite with work on its run branch gets a pull request too, and every body links the others",
        "The run is `done` only when all of them are merged",
        "`/interlock deliver owner/name[,owner/name]` counts those satellites as delivered without their merge",
        "`satellites: [../docs]` in the `--config` file names repositories on disk, relative to the run's repository",
        "every satellite's run branch into the branch that satellite's folder has checked out",
    ):
        assert words in said, words
    assert "`satellites`, `acceptsRequests`" not in text


def test_a_decision_on_github_shows_the_delivery_state_the_job_stored(world: World) -> None:
    # SPEC E2, U7: the decision file's git state comes from the job's record (app/runner/gitstate.py), for the
    # run branch and each satellite; before, the service had none and said "git state not available"
    issue = setup(world)
    record = {"seq": 1, "stage": "build", "status": "failed", "answer": "The tests do not pass.", "commits": 0}
    record["git"] = {
        "head": "c0ffee" * 6 + "0000",
        "ahead": 2,
        "files_changed": ["app.py"],
        "conflicts": ["app.py"],
        "satellites": {DOCS: {"head": "d0c5" * 10, "ahead": 1, "files_changed": ["guide.md"], "conflicts": []}},
    }
    world.job_done(issue, 1, "build", "", record=json.dumps(record))
    assert world.run(issue).status is Status.FAILED
    (decision,) = [c["body"] for c in world.fake.comments.values() if c["body"].startswith("# Decision needed")]
    assert "git state not available" not in decision
    assert "- head `c0ffeec0ffee`, 2 commit(s) ahead of `develop`" in decision
    assert "- files changed: `app.py`" in decision and "- conflicts with base: app.py" in decision
    assert f"- satellite `{DOCS}`: head `d0c5d0c5d0c5`, 1 commit(s) ahead, files changed: `guide.md`" in decision
    assert "conflicts with `develop` in 1 file(s)" in decision  # the alert, from the same state
