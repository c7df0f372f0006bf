"""What a person must answer is shown to them: questions and gate answers in full or by the screenful (SPEC V6,
H1), and a local run ends (`done`) once its branch is merged into the base (SPEC GH6)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.errors import RunFinished
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.local.config import GateMode
from app.local.reports import board_rows, gate_answer, render_status, screen_lines
from app.local.shell import Progress
from tests.helpers import edge, graph, node
from tests.local.harness import IDENTITY, Bench, graph_file
from tests.local.test_runs import LOOP, WORK, at

QUESTIONS = "Two things first:\n1. Which file?\n\n2. Which greeting?"
PASSED = {"answer": "VERDICT: PASS"}
ASKING = {"work:1:deliver": {"answer": f"{QUESTIONS}\nVERDICT: NEEDS_INPUT"}, "work": WORK, "review": PASSED}
LONG = "\n".join(f"plan line {n}" for n in range(1, 101))
JUDGED = parse_graph(  # a gated node with two labels: a wrong verdict is re-asked before the gate opens
    graph([node("edit", humanGate=True)], [edge("edit", "PASS", "__end__"), edge("edit", "FAIL", "edit")], "edit")
)


def test_questions_in_full_in_the_progress_lines_and_the_status(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V6: every line of the questions reaches the person, not only the first
    bench = Bench(tmp_path, ASKING, monkeypatch)
    shell = bench.shell()
    shell.progress = Progress(io.StringIO())
    run = shell.start(LOOP, "Greet", "")
    printed = shell.progress.stream.getvalue()  # type: ignore[attr-defined]
    assert run.status is Status.AWAITING_INPUT and run.questions == QUESTIONS
    assert all(line in printed for line in QUESTIONS.splitlines())
    shown = render_status(run, LOOP)
    assert "  questions from work:\n    Two things first:\n    1. Which file?\n\n    2. Which greeting?\n" in shown


def test_ask_mode_shows_the_questions_and_the_typed_answer_goes_on(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V6, C1: in ask mode the terminal reads the answer; it becomes the person's note of the next mission
    bench = Bench(tmp_path, ASKING, monkeypatch)
    prompts: list[str] = []
    answers = iter(["src/work.txt, and say hello"])

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    run = bench.shell(GateMode.ASK, ask=ask).start(LOOP, "Greet", "")
    assert run.status is Status.AWAITING_MERGE and run.visits["work"] == 1
    assert QUESTIONS in prompts[0] and "interlock answer" in prompts[0]
    assert "src/work.txt, and say hello" in bench.prompts()["0002-work"]


def test_ask_mode_with_no_answer_leaves_the_run_waiting(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, ASKING, monkeypatch)
    run = bench.shell(GateMode.ASK, ask=lambda _prompt: "  ").start(LOOP, "Greet", "")
    assert run.status is Status.AWAITING_INPUT and run.questions == QUESTIONS


def test_gate_prompt_shows_a_screenful_of_the_answer_and_where_the_rest_is(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H1: the person approves what they read; a long answer is cut to the terminal, the rest one command away
    monkeypatch.setenv("LINES", "30")
    bench = Bench(tmp_path, {"edit": {"answer": LONG, "write": {"q.txt": "quote"}}}, monkeypatch)
    prompts: list[str] = []
    answers = iter(["a", ""])

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    run = bench.shell(GateMode.ASK, ask=ask).start(graph_file("basics/quote-edit.json"), "Edit", "")
    assert run.status is Status.AWAITING_MERGE
    command = f"git show interlock/state:runs/{run.id}/missions/0000/0001-edit.json"
    assert "plan line 1\n" in prompts[0] and "plan line 22\n" in prompts[0] and "plan line 23\n" not in prompts[0]
    assert "[… 78 more lines]" in prompts[0] and f"full answer: {command}" in prompts[0]
    assert json.loads(bench.show(command.removeprefix("git show ")))["answer"].startswith(LONG)


def test_status_at_a_gate_shows_the_worker_answer_not_the_reask(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V5, H1: the gate opened on the re-ask's verdict, but what is approved is the work of mission #1
    script = {"edit:1:deliver": {"answer": f"{LONG}\nVERDICT: MAYBE"}, "edit:1:reask": {"answer": "VERDICT: PASS"}}
    bench = Bench(tmp_path, script, monkeypatch)
    shell = bench.shell()
    run = shell.start(JUDGED, "Edit", "")
    assert run.status is Status.GATE_WAIT and run.gate is not None and run.gate.mission == 2
    view = gate_answer(run, shell.store, lines=5)
    assert view is not None and (view["mission"], view["lines"]) == (1, 101)
    shown = render_status(run, JUDGED, "none", view)
    assert "    answer of mission #1 at edit:\n    plan line 1\n" in shown and "plan line 6" not in shown
    where = f"git show interlock/state:runs/{run.id}/missions/0000/0001-edit.json"
    assert f"    [… 96 more lines]\n    full answer: {where}" in shown


def merge(bench: Bench, branch: str, *options: str) -> str:
    """A person merges the run branch into develop in their own checkout; returns develop's new head."""
    bench.repo.git.checkout("develop")
    with bench.repo.git.custom_environment(**IDENTITY):
        bench.repo.git.merge(*options, branch)
    return str(bench.repo.head.commit.hexsha)


def test_merging_the_run_branch_ends_the_run_once(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC GH6: a person merges, the run is done — recorded in the journal, the worktree removed, once
    bench = Bench(tmp_path, {"work": WORK, "review": PASSED}, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "Work", "")
    assert shell.notice_merge(run) is run  # not merged yet: nothing changes
    head = merge(bench, run.branch, "--no-ff", "-m", "merge the run")
    done = shell.notice_merge(shell.store.load(run.id))
    assert done.status is Status.DONE and f"{run.id}/merged/{head}" in done.applied
    assert json.loads(bench.show(f"interlock/state:runs/{run.id}.json"))["status"] == "done"
    assert not (Path(bench.repo.git_dir) / "interlock" / "worktrees" / run.id).exists()
    assert shell.notice_merge(shell.store.load(run.id)).version == done.version
    assert board_rows([done])[0]["status"] == "done"


def test_a_fast_forward_counts_and_other_commits_on_the_base_do_not(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, {"work": WORK, "review": PASSED}, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "Work", "")
    bench.repo.git.checkout("develop")
    (bench.folder / "other.txt").write_text("unrelated\n")
    bench.repo.index.add(["other.txt"])
    with bench.repo.git.custom_environment(**IDENTITY):
        bench.repo.git.commit("-m", "someone else's work")
    assert shell.notice_merge(shell.store.load(run.id)).status is Status.AWAITING_MERGE
    bench.repo.git.reset("--hard", "main")  # develop back where the run started: the merge fast-forwards
    merge(bench, run.branch, "--ff-only")
    assert shell.notice_merge(shell.store.load(run.id)).status is Status.DONE


def test_continuing_a_merged_run_records_the_merge_first(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, {"work": WORK, "review": PASSED}, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "Work", "")
    merge(bench, run.branch, "--no-ff", "-m", "merge")
    with pytest.raises(RunFinished, match="the run is done"):  # over: abandoning it is refused, and says why
        shell.send(run.id, at(run.id, ev.Abandon))
    assert shell.store.load(run.id).status is Status.DONE


def test_a_deleted_run_branch_leaves_the_run_to_people(tmp_path: Path, monkeypatch: Any) -> None:
    bench = Bench(tmp_path, {"work": WORK, "review": PASSED}, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "Work", "")
    bench.repo.git.worktree("remove", "--force", str(Path(bench.repo.git_dir) / "interlock" / "worktrees" / run.id))
    bench.repo.git.branch("-D", run.branch)
    assert shell.notice_merge(shell.store.load(run.id)).status is Status.AWAITING_MERGE
    assert shell.send(run.id, at(run.id, ev.Abandon)).status is Status.CANCELLED


def test_a_screenful_is_the_terminal_height_and_never_more_than_40_lines(monkeypatch: Any) -> None:
    monkeypatch.setenv("LINES", "200")
    assert screen_lines() == 40
    monkeypatch.setenv("LINES", "20")
    assert screen_lines() == 12


def test_a_squash_merge_is_not_seen(tmp_path: Path, monkeypatch: Any) -> None:
    # the squashed commit is new: git cannot tie it to the run branch, so the run waits for a person's word
    bench = Bench(tmp_path, {"work": WORK, "review": PASSED}, monkeypatch)
    shell = bench.shell()
    run = shell.start(LOOP, "Work", "")
    merge(bench, run.branch, "--squash")
    with bench.repo.git.custom_environment(**IDENTITY):
        bench.repo.git.commit("-m", "squashed")
    assert (bench.folder / "src" / "work.txt").exists()
    assert shell.notice_merge(shell.store.load(run.id)).status is Status.AWAITING_MERGE


def test_ask_mode_asks_again_after_an_answer_it_cannot_read_at_a_gate(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H1: a typo at the gate prompt neither passes the gate nor leaves it silently
    bench = Bench(tmp_path, {"edit": {"answer": "the quote", "write": {"q.txt": "quote"}}}, monkeypatch)
    prompts: list[str] = []
    answers = iter(["aprove", "a", "looks right"])

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    run = bench.shell(GateMode.ASK, ask=ask).start(graph_file("basics/quote-edit.json"), "Edit", "")
    assert run.status is Status.AWAITING_MERGE
    assert prompts[1].startswith("Type a (approve), m (amend) or s (stop here")
    assert "looks right" in json.dumps(run.context.preamble[-1].text)


def test_local_progress_names_no_pull_request(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H1, GH6: locally a gate is approved with `interlock approve` and the run branch merged by hand;
    # the messages written for the issue on GitHub (approve the pull request...) are not printed here
    bench = Bench(tmp_path, {"edit": {"answer": "the quote", "write": {"q.txt": "quote"}}}, monkeypatch)
    shell = bench.shell()
    shell.progress = Progress(io.StringIO())
    run = shell.start(graph_file("basics/quote-edit.json"), "Edit", "")
    assert run.status is Status.GATE_WAIT
    shell.send(run.id, at(run.id, ev.GateApproved, note="", by="me"))
    printed = shell.progress.stream.getvalue()  # type: ignore[attr-defined]
    assert "edit · gate open: PASS waits for a person" in printed
    assert "delivery ready: review the run branch and merge it yourself" in printed
    assert "pull request" not in printed


def test_a_local_gate_says_where_the_work_to_review_is_instead_of_a_pull_request(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC H1: the gate's OpenPullRequest effect is not dropped on a local run: it names the run branch
    bench = Bench(tmp_path, {"edit": {"answer": "the quote", "write": {"q.txt": "quote"}}}, monkeypatch)
    shell = bench.shell()
    shell.progress = Progress(io.StringIO())
    run = shell.start(graph_file("basics/quote-edit.json"), "Edit", "")
    printed = shell.progress.stream.getvalue()  # type: ignore[attr-defined]
    assert f"edit · work to review on {run.branch}: git diff {run.base}...{run.branch}" in printed


def test_a_reason_of_several_lines_stays_inside_the_status_block(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC E2: the cause of a failed mission (its stderr) is shown under `reason`, not at the left margin
    bench = Bench(tmp_path, {"work": {"answer": "partial work\nthen: boom", "exit": 3}}, monkeypatch)
    run = bench.shell().start(LOOP, "Greet", "")
    assert run.status is Status.FAILED and run.reason is not None and "\n" in run.reason.message
    shown = render_status(run, LOOP)
    block = shown.split("  reason   ", 1)[1].split("\n  budget", 1)[0]
    assert all(line.startswith("           ") or not line for line in block.splitlines()[1:])


def test_status_of_a_running_run_with_a_stop_asked_says_it_will_stop(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J4: after `interlock stop` a live run ends at its mission's return: status says that, not "working"
    bench = Bench(tmp_path, ASKING, monkeypatch)
    run = bench.shell().start(LOOP, "Greet", "")
    running = run.but(status=Status.RUNNING, stop_requested=True)
    assert "a stop was asked; the run stops when its current mission returns" in render_status(running, LOOP, "live")
    assert "the runner stopped; `interlock resume" in render_status(running, LOOP, "stopped")
