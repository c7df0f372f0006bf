"""End to end on disk: real repositories, a scripted agent through the agent protocol, the git journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.errors import InterlockError
from app.engine.graph.validate import parse_graph
from app.engine.record import MissionStatus, ReasonCode, Status
from app.local.config import GateMode
from app.local.gitops import GitProblem, create_run_branch, open_repo
from app.local.missions import now
from tests.helpers import edge, graph, node
from tests.local.harness import IDENTITY, Bench, graph_file

LOOP = parse_graph(
    graph(
        [node("work", requiresChanges=True, maxVisits=3), node("review", "review", maxVisits=3)],
        [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")],
        entry="work",
    )
)
WORK = {"answer": "did it", "write": {"src/work.txt": "work of visit {visit}, mission {mission}"}}


def at(run_id: str, kind: type[ev.Event], **fields: Any) -> Any:
    return lambda run: kind(key=f"{run_id}/{kind.__name__}/{run.version}", at=now(), **fields)


def test_review_loop_reaches_the_end_with_commits_and_a_readable_journal(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC B1, GH2, J1, C5: each mission's work is committed on the run branch; the journal is on interlock/state
    bench = Bench(
        tmp_path,
        {"work": WORK, "review:1": {"answer": "missing tests\nVERDICT: FAIL"}, "review:2": {"answer": "VERDICT: PASS"}},
        monkeypatch,
    )
    run = bench.shell().start(LOOP, "Do the work", "details")
    assert run.status is Status.AWAITING_MERGE and run.visits == {"work": 2, "review": 2}
    log = bench.repo.git.log("--format=%s|%an|%cn", run.branch).splitlines()
    assert log[0] == f"interlock({run.id}): work mission #3 (deliver)|Interlock|Interlock"
    assert sum("work mission" in line for line in log) == 2 and log[-1].startswith("initial")
    record = json.loads(bench.show(f"interlock/state:runs/{run.id}.json"))
    assert record["status"] == "awaiting_merge" and record["version"] == run.version
    mission = json.loads(bench.show(f"interlock/state:runs/{run.id}/missions/0002-review.json"))
    assert (
        mission["answer"] == "missing tests\nVERDICT: FAIL\n" and "missing tests" not in record["context"]["results"][0]
    )
    assert bench.repo.active_branch.name == "main" and not bench.repo.is_dirty(untracked_files=True)


def test_a_start_killed_before_its_first_record_leaves_no_branch_in_the_way(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J2: a kill -9 between making the run branch and saving the record leaves only the empty start commit;
    # starting again with the same id takes that branch over, while a branch with work on it is never touched
    bench = Bench(tmp_path, {"work": WORK, "review": {"answer": "VERDICT: PASS"}}, monkeypatch)
    create_run_branch(open_repo(bench.folder), "interlock/r-killed", "develop", "x")  # what the killed start left
    run = bench.shell().start(LOOP, "Do the work", "", run_id="r-killed")
    assert run.status is Status.AWAITING_MERGE and bench.repo.git.log("--format=%s", run.branch).count("start") == 1
    create_run_branch(open_repo(bench.folder), "interlock/r-work", "develop", "x")
    with bench.repo.git.custom_environment(**IDENTITY):  # a person's commit on it: no longer an unused start
        tree = bench.repo.git.rev_parse("develop^{tree}")
        work = bench.repo.git.commit_tree(tree, "-p", "interlock/r-work", "-m", "mine")
    bench.repo.git.update_ref("refs/heads/interlock/r-work", work)
    with pytest.raises(GitProblem, match="already exists"):
        bench.shell().start(LOOP, "Do the work", "", run_id="r-work")
    assert bench.repo.heads["interlock/r-work"].commit.hexsha == work


def test_missing_base_branch_is_a_clear_error(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, {}, monkeypatch, base="trunk")
    with pytest.raises(GitProblem, match="base branch 'trunk' does not exist") as caught:
        bench.shell().start(LOOP, "x", "")
    assert "git branch trunk" in caught.value.hint


@pytest.mark.parametrize(
    ("script", "policy", "code", "status"),
    [
        (
            {"work": WORK, "review": {"answer": "VERDICT: FAIL"}},
            None,
            ReasonCode.VISIT_BUDGET_EXHAUSTED,
            Status.ESCALATED,
        ),
        ({"work": WORK, "review": {"answer": "VERDICT: MAYBE"}}, None, ReasonCode.UNROUTABLE_VERDICT, Status.ESCALATED),
        ({"work": {"answer": "Traceback: disk full", "exit": 2}}, None, ReasonCode.MISSION_FAILED, Status.FAILED),
        (
            {"work": WORK, "review": {"answer": "VERDICT: FAIL"}},
            {"maxAttempts": 3},
            ReasonCode.ATTEMPT_BUDGET_EXHAUSTED,
            Status.ESCALATED,
        ),
        (
            {"work": WORK, "review": {"answer": "VERDICT: FAIL"}},
            {"maxCalls": 2},
            ReasonCode.CALL_BUDGET_EXHAUSTED,
            Status.ESCALATED,
        ),
        (
            {"work": WORK, "review": {"answer": "VERDICT: FAIL"}},
            {"maxUnits": 2.5},
            ReasonCode.COST_BUDGET_EXHAUSTED,
            Status.ESCALATED,
        ),
    ],
)
def test_every_escalation_reason_stops_with_a_decision_file(
    tmp_path: Path,
    monkeypatch: Any,
    script: dict[str, Any],
    policy: dict[str, Any] | None,
    code: ReasonCode,
    status: Status,
) -> None:
    # SPEC E1, E2, B2, P2: typed reason, decision file beside the record, budgets stop before the call
    from app.engine.graph.model import Policy

    bench = Bench(tmp_path, script, monkeypatch, policy=Policy.model_validate(policy) if policy else None)
    run = bench.shell().start(LOOP, "Do the work", "")
    assert (run.status, run.reason.code) == (status, code)  # type: ignore[union-attr]
    decision = bench.show(f"interlock/state:runs/{run.id}/decision.md")
    assert decision.startswith(f"# Decision needed: run `{run.id}`") and f"interlock resume {run.id}" in decision
    assert len(bench.prompts()) == run.ledger.attempts  # every charged attempt ran; none after the stop
    if code is ReasonCode.MISSION_FAILED:
        assert "Traceback: disk full" in run.reason.message  # type: ignore[union-attr]


def test_invalid_selection_and_upstream_rejection(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V8, U3, E1
    triage = graph_file("operations/triage.json")
    bench = Bench(tmp_path, {"triage": {"answer": "Looks like a crash."}, "*": {"answer": "no idea"}}, monkeypatch)
    run = bench.shell().start(triage, "It crashes", "")
    assert run.reason.code is ReasonCode.INVALID_SELECTION  # type: ignore[union-attr]
    upstream = Bench(
        tmp_path / "u",
        {"work": {"answer": "```request\nacme/lib\nAdd X\nplease\n```\nVERDICT: NEEDS_UPSTREAM"}},
        monkeypatch,
        upstream=["acme/lib"],
    )
    shell = upstream.shell()
    run = shell.start(LOOP, "Needs lib", "")
    assert run.status is Status.AWAITING_UPSTREAM and run.upstream.target == "acme/lib"  # type: ignore[union-attr]
    run = shell.send(run.id, at(run.id, ev.UpstreamChanged, state="rejected"))
    assert run.reason.code is ReasonCode.UPSTREAM_REJECTED  # type: ignore[union-attr]


def test_gate_approved_and_amended_notes_reach_the_next_prompt(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H1, H2, H3, B3, C1
    gated = parse_graph(
        graph(
            [node("plan", "planning", humanGate=True), node("build")],
            [edge("plan", "PASS", "build"), edge("build", "PASS", "__end__")],
            entry="plan",
        )
    )
    bench = Bench(tmp_path, {"plan": {"answer": "the plan"}, "build": {"answer": "built"}}, monkeypatch)
    shell = bench.shell()
    run = shell.start(gated, "Plan it", "")
    assert run.status is Status.GATE_WAIT
    run = shell.send(run.id, at(run.id, ev.GateAmended, note="Split it in two steps."))
    assert run.status is Status.GATE_WAIT and run.visits == {"plan": 1}
    assert "Split it in two steps." in bench.prompts()["0002-plan"]
    run = shell.send(run.id, at(run.id, ev.GateApproved, note="Ship the first step only."))
    assert run.status is Status.AWAITING_MERGE
    assert "Ship the first step only." in bench.prompts()["0003-build"]


def test_gates_asked_on_the_terminal(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H2, H4: ask mode prompts; approve mode passes gates on autopilot and logs it
    gated = graph_file("basics/quote-edit.json")
    bench = Bench(tmp_path, {"edit": {"answer": "edited", "write": {"q.txt": "quote"}}}, monkeypatch)
    answers = iter(["a", "looks good"])
    run = bench.shell(GateMode.ASK, ask=lambda _prompt: next(answers)).start(gated, "Edit the quote", "")
    assert run.status is Status.AWAITING_MERGE
    assert "looks good" in json.dumps(run.context.json_data())
    auto = Bench(tmp_path / "auto", {"edit": {"answer": "edited", "write": {"q.txt": "quote"}}}, monkeypatch)
    run = auto.shell(GateMode.APPROVE).start(gated, "Edit the quote", "")
    assert run.status is Status.AWAITING_MERGE and "passed by autopilot" in json.dumps(run.context.json_data())


def test_needs_input_answered_continues_without_a_visit(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V6
    bench = Bench(
        tmp_path,
        {
            "work:1:deliver": {"answer": "Which file?\nVERDICT: NEEDS_INPUT"},
            "work": WORK,
            "review": {"answer": "VERDICT: PASS"},
        },
        monkeypatch,
    )
    shell = bench.shell()
    run = shell.start(LOOP, "Edit a file", "")
    assert run.status is Status.AWAITING_INPUT
    run = shell.send(run.id, at(run.id, ev.InputAnswered, text="Use src/work.txt"))
    assert run.status is Status.AWAITING_MERGE and run.visits["work"] == 1
    assert "Use src/work.txt" in bench.prompts()["0002-work"]


def test_compaction_is_visible_in_the_prompts_agents_receive(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC C2, C3
    long = "finding " + "x" * 6000
    bench = Bench(tmp_path, {"work": WORK, "review": {"answer": f"{long}\nVERDICT: FAIL"}}, monkeypatch)
    looped = parse_graph({**LOOP.to_json(), "nodes": [{**n, "maxVisits": 5} for n in LOOP.to_json()["nodes"]]})
    bench.shell().start(looped, "Loop", "")
    prompts = bench.prompts()
    last = prompts[max(prompts)]
    assert last.count(long) == 1  # newest results intact, older ones cut or reduced to their header
    assert "cut by Interlock" in last and "\n#2 review v1 (deliver): VERDICT: FAIL → work\n" in last
    assert last.count("VERDICT: FAIL → work") == 4  # routing lines are never compacted


def test_budget_stops_before_the_call(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC P2: the refused call never reaches the agent
    from app.engine.graph.model import Policy

    bench = Bench(
        tmp_path, {"work": WORK, "review": {"answer": "VERDICT: FAIL"}}, monkeypatch, policy=Policy(maxCalls=3)
    )  # type: ignore[call-arg]
    run = bench.shell().start(LOOP, "Loop", "")
    assert run.reason.code is ReasonCode.CALL_BUDGET_EXHAUSTED and len(bench.prompts()) == 3  # type: ignore[union-attr]


def test_stop_and_resume(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J4, J3, B4
    bench = Bench(tmp_path, {"work": WORK, "review": {"answer": "VERDICT: PASS"}}, monkeypatch)
    shell = bench.shell()
    shell.config = shell.config.model_copy(update={"gates": GateMode.STOP})
    run = shell.start(
        parse_graph(
            {**LOOP.to_json(), "nodes": [{**LOOP.to_json()["nodes"][0], "humanGate": True}, LOOP.to_json()["nodes"][1]]}
        ),
        "Stop me",
        "",
    )
    assert run.status is Status.GATE_WAIT
    run = shell.send(run.id, lambda r: ev.StopRequested(key=f"stop{r.version}", at=now()), drive=False)
    assert run.status is Status.INTERRUPTED and run.reason.code is ReasonCode.STOPPED  # type: ignore[union-attr]
    run = shell.send(run.id, at(run.id, ev.Resume, stage="review"))
    assert run.status is Status.AWAITING_MERGE and run.visits == {"review": 1}


def test_resume_of_a_live_run_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, {"work": WORK, "review": {"answer": "VERDICT: PASS"}}, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "x", "")
    with shell.lock(run.id), pytest.raises(InterlockError, match="being executed by process"):
        shell.send(run.id, at(run.id, ev.Resume))
    assert run.status is Status.AWAITING_MERGE
    assert MissionStatus.DONE in {m.status for m in run.missions}


@pytest.mark.parametrize(
    ("second_work", "choice", "files"),
    [
        ({"README.md": "# test repo\n"}, "resume", "none"),  # two commits that net to no change
        ({"src/hello.py": "print('hello')\n"}, "deliver", "`README.md`, `src/hello.py`"),
    ],
)
def test_decision_file_counts_files_changed_not_commits(
    tmp_path: Path, monkeypatch: Any, second_work: dict[str, str], choice: str, files: str
) -> None:
    # SPEC E2: "the branch has work" only when it changes files against its base; the empty start commit and
    # commits that undo each other do not count
    looped = parse_graph(
        graph(
            [node("work", maxVisits=3), node("review", "review", maxVisits=1)],
            [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")],
            entry="work",
        )
    )
    script = {
        "work:1": {"answer": "changed", "write": {"README.md": "# changed\n"}},
        "work:2": {"answer": "again", "write": second_work},
        "review": {"answer": "VERDICT: FAIL"},
    }
    bench = Bench(tmp_path, script, monkeypatch)
    run = bench.shell().start(looped, "Work", "")
    assert run.reason.code is ReasonCode.VISIT_BUDGET_EXHAUSTED and run.missions[-1].verdict == "PASS"  # type: ignore[union-attr]
    decision = bench.show(f"interlock/state:runs/{run.id}/decision.md")
    assert "3 commit(s) ahead of `develop`" in decision and f"- files changed: {files}\n" in decision
    assert f"**{choice}** —" in decision and f"| {choice} **(recommended)** |" in decision
