# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Supervision on GitHub (SPEC U6, issue 13 item 6): a team with ``onRunEnd`` supervises the runs of the other
teams. A run of team ``core`` ends; team ``watch`` gets an issue and a run on its supervision graph whose context
is the ended run's journal; what it files are requests that each cite a finding that exists, checked by code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.engine.record import ReasonCode, Status
from app.github.client import RefConflict
from app.store.journal import orders_folder
from app.webhooks.teams import supervision
from app.webhooks.teams.supervision import CONTEXT_BYTES
from tests.github.test_flows import (  # noqa: F401 - fixture
    REPO,
    World,
    merged_payload,
    retry_waits,
    world,
)
from tests.github.test_team_queue import configure, label_payload, run_of, said
from tests.helpers import doc

TEAMS = """base: develop
default_graph: small
gatekeepers: [carol]
board_issue: false
teams:
  core:
    concurrency: 2
  watch:
    onRunEnd: supervision
    concurrency: {n}
"""
ENDED = 7  # the supervised issue; the stand-in numbers the issues the App opens from 1 here (``numbered_from_one``)


@pytest.fixture(autouse=True)
def numbered_from_one(world: World) -> None:
    """The supervision issue is the first the App opens, #1 (the board issue, which would come first, is off in
    ``TEAMS``: tests/github/test_board_issue.py covers it), so that these tests can name the supervising run."""
    world.fake.issue_numbers_from[REPO] = 1


def end_a_core_run(world: World, issue: int = ENDED) -> None:
    """A run of team core through its graph to the merge: two missions with verdicts and costs, then done."""
    world.deliver("issues", label_payload(issue))
    world.job_done(issue, 1, "build", "Built the greeting.\nVERDICT: PASS")
    world.review(issue, "approved")
    world.job_done(issue, 2, "review", "Looks right.\nVERDICT: PASS")
    world.deliver("pull_request", merged_payload(f"interlock/issue-{issue}"), delivery=f"merged-{issue}")
    assert run_of(world, issue).status is Status.DONE


def supervision_issues(world: World) -> list[dict[str, Any]]:
    return [issue for issue in world.fake.filed if issue["title"].startswith("Supervision of run")]


def order(world: World, issue: int, name: str) -> dict[str, Any]:
    files = world.fake.logical_files(REPO, "interlock/state")
    data: dict[str, Any] = json.loads(files[f"{orders_folder(f'issue-{issue}')}{name}"])
    return data


def main_head(world: World) -> str:
    return world.fake.refs[(REPO, "main")]


def request(*findings: str) -> str:
    lines = "\n".join(findings)
    return f"```request\n{REPO}\nCache the graph\nLoading is slow.\n{lines}\n```\nVERDICT: NEEDS_UPSTREAM"


def test_a_run_that_ends_is_supervised_with_its_journal_in_context(world: World) -> None:
    # SPEC U6: the other team's run ended; an issue labelled team:watch, and a run of watch on its onRunEnd graph
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    [opened] = supervision_issues(world)
    assert opened["title"] == f"Supervision of run issue-{ENDED}"
    supervisor = run_of(world, 1)
    assert (supervisor.team, supervisor.graph, supervisor.supervision) == ("watch", "supervision", True)
    assert world.fake.labels[(REPO, 1)][:1] == ["team:watch"]
    prompt = order(world, 1, "0001-observe.json")["prompt"]  # what the mission received
    assert f"run issue-{ENDED} mission 1, build visit 1 (deliver): done, verdict PASS" in prompt  # verdicts
    assert "- build (visit 1): PASS → review" in prompt and "- review (visit 1): PASS → __end__" in prompt  # path
    assert "## Ledger" in prompt and "- total: 2 attempt(s), 2 call(s), 2 accepted, $0.0200 known spend" in prompt
    assert f"No decision file (`runs/issue-{ENDED}/decision.md`)" in prompt
    assert run_of(world, ENDED).supervision is False  # core's run is no supervision run


def test_the_decision_file_of_an_escalated_and_abandoned_run_is_in_context_redacted(world: World) -> None:
    # SPEC U6, J5: the decision file enters the context, secrets masked
    configure(world, TEAMS.format(n=1))
    world.deliver("issues", label_payload(ENDED))
    world.job_done(ENDED, 1, "build", "", store_record=False)  # the job failed: the run escalates
    decision = f"runs/issue-{ENDED}/decision.md"
    written = world.fake.files_at(REPO, "interlock/state")[decision]
    token = "ghp_" + "a" * 36
    world.fake.commit_file(REPO, "interlock/state", decision, f"{written}\nthe log said {token}\n")
    world.comment(ENDED, "/interlock abandon")
    assert run_of(world, ENDED).status is Status.CANCELLED
    prompt = order(world, 1, "0001-observe.json")["prompt"]
    assert f"## Decision file `{decision}`" in prompt and "mission_failed" in prompt and "the log said" in prompt
    assert token not in prompt and token not in json.dumps(world.fake.issues)


def test_a_supervision_run_files_a_request_citing_findings(world: World) -> None:
    # SPEC U6: each cited finding exists (a file and line at a commit, a run and mission, a commit): filed
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    sha = main_head(world)
    answer = request(f"Finding: README.md:1@{sha}", f"Finding: run issue-{ENDED} mission 2", f"Finding: commit {sha}")
    world.job_done(1, 1, "observe", answer)
    filed = world.fake.filed[-1]
    assert filed["title"] == "Cache the graph" and f"Finding: run issue-{ENDED} mission 2" in filed["body"]
    assert run_of(world, 1).status is Status.AWAITING_UPSTREAM  # the supervised repository is no `upstream:` entry


@pytest.mark.parametrize(
    ("finding", "why"),
    [
        (f"run issue-{ENDED} mission 9", f"run issue-{ENDED} has no mission 9"),
        ("run issue-99 mission 1", "run issue-99 is not in the journal"),
        ("commit " + "d" * 40, f"commit {'d' * 40} is not in octo/app"),
        ("nowhere.py:1@{sha}", "nowhere.py does not exist at"),
        ("README.md:5@{sha}", "README.md has 1 lines at"),
    ],
)
def test_a_request_citing_what_does_not_exist_is_refused(world: World, finding: str, why: str) -> None:
    # SPEC U6: the shell checks each citation before filing: nothing filed, the run escalates and is told why
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", request("Finding: " + finding.format(sha=main_head(world))))
    assert supervision_issues(world) == world.fake.filed  # nothing but the supervision issue
    supervisor = run_of(world, 1)
    assert supervisor.status is Status.ESCALATED and supervisor.reason.code is ReasonCode.CITATION_NOT_FOUND
    assert any("Interlock refused to file the request" in text and why in text for text in said(world, 1))


def test_a_request_without_a_citation_is_reasked_then_escalated_and_never_filed(world: World) -> None:
    # SPEC U6: refused by code, not by a prompt: re-asked once, then escalated with citation_missing
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", request("Trust me, it is slow."))
    assert order(world, 1, "0002-observe.json")["kind"] == "reask" and run_of(world, 1).status is Status.RUNNING
    world.job_done(1, 2, "observe", request("Finding: it is slow"))
    assert supervision_issues(world) == world.fake.filed
    supervisor = run_of(world, 1)
    assert supervisor.status is Status.ESCALATED and supervisor.reason.code is ReasonCode.CITATION_MISSING


def test_no_improvement_ends_done_and_a_supervision_run_supervises_nothing(world: World) -> None:
    # SPEC U6: "no improvement" is done, with no pull request; watch's own run ending starts no supervision
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.job_done(1, 1, "observe", "Nothing changed.\nVERDICT: NOTHING_NEW")
    assert run_of(world, 1).status is Status.DONE and "interlock:done" in world.fake.labels[(REPO, 1)]
    assert len(supervision_issues(world)) == 1 and run_of(world, 2) is None
    assert not any(pull["head"] == "interlock/issue-1" for pull in world.fake.pulls.values())


def test_a_supervision_run_ending_is_supervised_by_no_other_team(world: World) -> None:
    # SPEC U6: two supervising teams each supervise core's run once; neither supervises the other's supervision
    configure(world, TEAMS.format(n=1) + "  audit:\n    onRunEnd: supervision\n")
    end_a_core_run(world)
    assert [(run_of(world, n).team, run_of(world, n).supervision) for n in (1, 2)] == [("watch", True), ("audit", True)]
    world.job_done(1, 1, "observe", "Nothing changed.\nVERDICT: NOTHING_NEW")
    assert run_of(world, 1).status is Status.DONE and len(supervision_issues(world)) == 2


def test_a_team_does_not_supervise_its_own_runs(world: World) -> None:
    # SPEC U6: a run of the supervising team (not a supervision run) ending starts nothing
    configure(world, TEAMS.format(n=1))
    payload = label_payload(ENDED)
    payload["issue"]["labels"] = [{"name": "feature-request"}, {"name": "team:watch"}]
    world.deliver("issues", payload)
    assert run_of(world, ENDED).team == "watch" and not run_of(world, ENDED).supervision
    world.comment(ENDED, "/interlock abandon")
    assert run_of(world, ENDED).status is Status.CANCELLED and supervision_issues(world) == []


def test_a_redelivered_end_starts_one_supervision(world: World) -> None:
    # SPEC U6, GH8: the end delivered again finds the issue and the run it started: nothing twice
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world)
    world.deliver("pull_request", merged_payload(f"interlock/issue-{ENDED}"), delivery=f"merged-{ENDED}")
    world.comment(ENDED, "/interlock status")  # any later event of the ended run
    assert len(supervision_issues(world)) == 1
    assert [d["inputs"]["run"] for d in world.fake.dispatches].count("issue-1") == 1


def test_a_state_branch_moved_meanwhile_opens_the_issue_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC U6, J2: the record of the issue lost a compare-and-swap; it is retried alone, no second issue
    configure(world, TEAMS.format(n=1))
    real, calls = supervision._record, []

    def moved_once(*args: Any) -> None:
        calls.append(args)
        if len(calls) == 1:
            raise RefConflict("PATCH", "/git/refs/heads/interlock/state", 422, "not a fast-forward")
        real(*args)

    monkeypatch.setattr(supervision, "_record", moved_once)
    end_a_core_run(world)
    assert len(calls) == 2 and len(supervision_issues(world)) == 1 and run_of(world, 1).supervision


def test_supervisions_wait_in_the_supervising_teams_queue(world: World) -> None:
    # SPEC U5, U6: watch runs one at a time; the second supervision waits, told its place, then starts by itself
    configure(world, TEAMS.format(n=1))
    end_a_core_run(world, 7)
    end_a_core_run(world, 8)
    titles = [issue["title"] for issue in supervision_issues(world)]
    assert titles == ["Supervision of run issue-7", "Supervision of run issue-8"]
    assert run_of(world, 1) is not None and run_of(world, 2) is None
    assert any("Place in the queue: **1**" in text for text in said(world, 2))
    world.job_done(1, 1, "observe", "Nothing changed.\nVERDICT: NOTHING_NEW")
    second = run_of(world, 2)
    assert second is not None and second.supervision and "run issue-8 mission 2" in second.request.body


def test_the_readme_says_how_supervision_works() -> None:
    # every README sentence is checked: the behaviour by the tests above, the words here
    text = " ".join(doc("github/teams.md").split())
    for sentence in (
        "A team that sets `onRunEnd: <graph>` supervises the runs of the other teams.",
        "When one of their runs ends (done or cancelled), the App opens an issue `Supervision of run <id>`, "
        "labelled `team:<name>`, whose body is the ended run's journal, its path, verdicts, ledger and decision "
        "file, redacted and cut to 12 kB,",
        "so the team's queue holds it like any trigger.",
        "One ended run starts one supervision per supervising team, however often its end is delivered; a "
        "supervision run's own end supervises nothing, and a team does not supervise its own runs.",
        "normally to the repository itself, which `upstream:` need not list, and then waits for the request",
        "`Finding: <path>:<line>@<commit>`, `Finding: commit <sha>` or `Finding: run <run-id> mission <number>`, "
        "each commit by its full 40-digit sha.",
        "A request without one is asked again once, then the run escalates with `citation_missing`; one citing a "
        "commit, file, line, run or mission that does not exist is not filed, and the run escalates with "
        "`citation_not_found`.",
        "A supervision run that reaches the end of its graph is done: nothing waits for a merge.",
        "`interlock config check` reports an `onRunEnd` graph that none of the team's graphsets holds nor the "
        "bundled library.",
    ):
        assert sentence in text, sentence
    assert CONTEXT_BYTES == 12_000  # "cut to 12 kB"
