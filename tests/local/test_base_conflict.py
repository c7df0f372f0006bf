"""End to end on disk: the base moves on while a run works, and the end checks the delivery against it (SPEC V9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.graph.validate import parse_graph
from app.engine.record import ReasonCode, Status
from app.local.basestate import with_delivery_state
from app.local.gitops import open_repo
from app.local.missions import now
from tests.helpers import doc, edge, graph, node
from tests.local.harness import IDENTITY, Bench
from tests.local.test_runs import at

GREET = "src/greet.txt"


def gated_work(conflict_edge: bool) -> Any:
    """work (a gate: the base moves on while the run waits there) → review → end; review CONFLICT → resolve."""
    nodes = [node("work", humanGate=True), node("review", "review")]
    edges = [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")]
    if conflict_edge:
        nodes.append(node("resolve"))
        edges += [edge("review", "CONFLICT", "resolve"), edge("resolve", "PASS", "review")]
    return parse_graph(graph(nodes, edges, entry="work"))


def commit_on_base(bench: Bench, tmp: Path, files: dict[str, str]) -> None:
    """Someone else's commit lands on `develop` (in a worktree of its own: the repository stays on `main`)."""
    tree = tmp / "elsewhere"
    bench.repo.git.worktree("add", "--quiet", str(tree), "develop")
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    with bench.repo.git.custom_environment(**IDENTITY):
        bench.repo.git.execute(["git", "-C", str(tree), "add", "-A"])
        bench.repo.git.execute(["git", "-C", str(tree), "commit", "--quiet", "-m", "meanwhile on develop"])
    bench.repo.git.worktree("remove", str(tree))


SCRIPT = {
    "work": {"answer": "wrote the greeting", "write": {GREET: "hello from the run\n"}},
    "review": {"answer": "VERDICT: PASS"},
    "resolve": {"answer": "took the base's greeting", "write": {GREET: "hello from develop\n"}},
}


def test_a_base_that_moved_on_in_conflict_routes_to_the_resolve_step(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V9: the review passes, the run branch conflicts with develop: CONFLICT → resolve, then the end
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    shell = bench.shell()
    run = shell.start(gated_work(conflict_edge=True), "Greet", "")
    assert run.status is Status.GATE_WAIT
    commit_on_base(bench, tmp_path, {GREET: "hello from develop\n"})
    run = shell.send(run.id, at(run.id, ev.GateApproved))
    hops = [(hop.stage, hop.verdict, hop.to) for hop in run.path]
    assert ("review", "CONFLICT", "resolve") in hops and hops[-1] == ("review", "PASS", "__end__")
    assert f"conflicts with its base 'develop' in 1 file(s): {GREET}" in bench.prompts()["0003-resolve"]
    assert run.status is Status.AWAITING_MERGE and run.visits == {"work": 1, "review": 2, "resolve": 1}


def test_a_conflict_without_an_edge_escalates_with_the_files_in_the_decision_file(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC V9, E2: no CONFLICT edge: base_conflict, and the decision file names the conflicting file
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    shell = bench.shell()
    run = shell.start(gated_work(conflict_edge=False), "Greet", "")
    commit_on_base(bench, tmp_path, {GREET: "hello from develop\n"})
    run = shell.send(run.id, at(run.id, ev.GateApproved))
    assert run.status is Status.ESCALATED and run.reason is not None
    assert run.reason.code is ReasonCode.BASE_CONFLICT and GREET in run.reason.message
    decision = bench.show(f"interlock/state:runs/{run.id}/decision.md")
    assert "`base_conflict`" in decision and f"conflicts with base: {GREET}" in decision
    assert "the branch conflicts with `develop` in 1 file(s)" in decision


def test_a_gate_approved_at_the_last_step_is_checked_against_the_base_as_it_is_now(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # SPEC V9, H1: the approval ends the run; the base moved on while the gate waited: the local shell reads it
    last_gate = parse_graph(graph([node("build", humanGate=True)], [edge("build", "PASS", "__end__")], entry="build"))
    bench = Bench(tmp_path, {"build": SCRIPT["work"]}, monkeypatch)
    shell = bench.shell()
    run = shell.start(last_gate, "Greet", "")
    assert run.status is Status.GATE_WAIT
    commit_on_base(bench, tmp_path, {GREET: "hello from develop\n"})
    run = shell.send(run.id, at(run.id, ev.GateApproved))
    assert run.reason is not None and run.reason.code is ReasonCode.BASE_CONFLICT


def test_a_base_that_moved_on_without_conflict_ends_normally(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC V9, GH6: develop moved on in another file: the run ends, awaiting its merge
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    shell = bench.shell()
    run = shell.start(gated_work(conflict_edge=True), "Greet", "")
    commit_on_base(bench, tmp_path, {"docs/other.txt": "unrelated\n"})
    run = shell.send(run.id, at(run.id, ev.GateApproved))
    assert run.status is Status.AWAITING_MERGE and "resolve" not in run.visits


@pytest.mark.parametrize(
    ("event", "checked"),
    [
        (ev.Resume(key="k", at=now()), True),
        (ev.RouteChosen(key="k", at=now(), verdict="PASS"), True),
        (ev.DecisionReturned(key="k", at=now(), seq=3, answer="PASS"), True),
        (ev.GateApproved(key="k", at=now()), True),
        (ev.Deliver(key="k", at=now()), False),  # a person's word: the engine does not check it
        (ev.StopRequested(key="k", at=now()), False),
    ],
)
def test_the_events_that_may_end_a_run_carry_the_state_read_now(
    tmp_path: Path, monkeypatch: Any, event: ev.Event, checked: bool
) -> None:
    # SPEC V9: each event that may end a local run gets the delivery's state as the repository is now
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(gated_work(conflict_edge=False), "Greet", "")
    commit_on_base(bench, tmp_path, {GREET: "hello from develop\n"})
    run = bench.shell().send(run.id, at(run.id, ev.GateAmended, note="again"))  # work visit 2 writes the file
    given = with_delivery_state(open_repo(bench.folder), run, event)
    assert (given.git is not None and given.git.conflicts == (GREET,)) is checked


def test_the_readme_says_how_the_end_is_checked_against_the_base() -> None:
    # SPEC V9: each sentence added to the README, checked against the behaviour tested above and in
    # tests/engine/test_base_conflict.py and tests/e2e/test_base_conflict_loop.py
    text = " ".join(doc("local/running.md", "github/satellites.md", "graphs/engine.md").split())
    for words in (
        "before a run ends and its pull request is marked ready, the delivery is checked against its base, with the "
        "git state the event that ends the run carries",
        "On a conflict the run follows the delivering node's `CONFLICT` edge when it has one, to a resolve step whose "
        "prompt names the files (a routing line); else it escalates with `base_conflict`, the files named in the "
        "reason and in the decision file.",
        "`CONFLICT` is the engine's label: it is never offered to a worker or a decision model, and an answer saying "
        "`VERDICT: CONFLICT` does not take the edge.",
        "A person's `deliver` is not checked (their word, given after reading the decision). An event that carries "
        "no git state is checked against what the newest event that read git found, which the record keeps "
        "(`conflicts`, the first 100 files, and `conflict_count`).",
        "`upstream_not_allowed`, `stopped`, `base_conflict`.",
        "The end is checked against the base as it is when the run ends (SPEC V9): the mission that ends a run "
        "carries the git state read right after it, and a gate approved, a route, a resume or a decision that ends "
        "it gets the state read from the repository then, by `git merge-tree --write-tree` (git 2.38 or newer).",
        "a run whose last mission leaves its branch conflicting with the base routes on `CONFLICT` or escalates with "
        "`base_conflict`, at no API call beyond the mission's own",
        "A person's review or command carries no git state (the service has no clone): when it ends the run (an "
        "approval at the last gate, `/interlock route`, `resume`), the end is checked against what the newest job "
        "found, which the record keeps",
        "a person who resolved a conflict by hand ends the run with `/interlock deliver`, which is never checked.",
    ):
        assert words in text, words
