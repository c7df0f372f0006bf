"""A local gate binds to the run branch's head too (SPEC H5): the approval is of the branch as it is now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.errors import GateRefused
from app.engine.record import Status
from tests.local.harness import IDENTITY, Bench, graph_file
from tests.local.test_runs import at

SCRIPT = {"edit": {"answer": "edited", "write": {"q.txt": "quote"}}}


def at_gate(tmp_path: Path, monkeypatch: Any) -> tuple[Bench, Any]:
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(graph_file("basics/quote-edit.json"), "Edit the quote", "")
    assert run.status is Status.GATE_WAIT
    return bench, run


def branch_head(bench: Bench, branch: str) -> str:
    return str(bench.repo.git.rev_parse(branch))


@pytest.mark.parametrize("kind", [ev.GateApproved, ev.GateAmended])
def test_a_local_review_is_of_the_branch_head_and_the_journal_names_it(
    tmp_path: Path, monkeypatch: Any, kind: type[ev.Event]
) -> None:
    # SPEC H5: the gate records the head the mission left; `approve` / `amend` imply the head now
    bench, run = at_gate(tmp_path, monkeypatch)
    head = branch_head(bench, run.branch)
    assert run.gate.head == head
    fields = {"note": "tweak"} if kind is ev.GateAmended else {}
    run = bench.shell().send(run.id, at(run.id, kind, by="dora", **fields))
    assert run.status is not Status.GATE_WAIT or run.gate.mission > 1  # passed, or amended and gated again
    if kind is ev.GateApproved:
        assert (run.path[-1].by, run.path[-1].commit) == ("dora", head)


def test_a_branch_moved_after_the_gate_opened_refuses_the_approval(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H5: a commit by hand on the run branch was not what the gate opened on
    bench, run = at_gate(tmp_path, monkeypatch)
    opened = run.gate.head
    with bench.repo.git.custom_environment(**IDENTITY):
        moved = bench.repo.git.commit_tree(f"{run.branch}^{{tree}}", "-p", run.branch, "-m", "by hand")
    bench.repo.git.update_ref(f"refs/heads/{run.branch}", moved)
    with pytest.raises(GateRefused) as refused:
        bench.shell().send(run.id, at(run.id, ev.GateApproved, by="dora"))
    assert f"`{moved[:7]}`" in refused.value.message and f"`{opened[:7]}`" in refused.value.message
    run = bench.shell().store.load(run.id)
    assert run.status is Status.GATE_WAIT and run.gate.head == opened
    run = bench.shell().send(run.id, at(run.id, ev.RouteChosen, by="dora", verdict="PASS"))  # by hand still
    assert run.status is Status.AWAITING_MERGE


def test_separate_duties_in_the_graph_keep_the_local_launcher_from_approving(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC H6: locally the requester is who started the run (its launch's `by`)
    from app.engine.graph.validate import parse_graph

    data = graph_file("basics/quote-edit.json").to_json()
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(parse_graph({**data, "gates": {"separateDuties": True}}), "Edit the quote", "")
    assert run.requested_by and run.status is Status.GATE_WAIT
    with pytest.raises(GateRefused, match="duties are separated"):
        bench.shell().send(run.id, at(run.id, ev.GateApproved, by=run.requested_by))
    run = bench.shell().send(run.id, at(run.id, ev.GateApproved, by="someone-else"))
    assert run.status is Status.AWAITING_MERGE


def test_interlock_approve_of_a_moved_branch_says_why_and_changes_nothing(tmp_path: Path) -> None:
    # SPEC H5: `interlock approve` as a person types it: a clear error naming both commits, no traceback
    import json
    import os

    from tests.local.harness import AGENT, make_repo
    from tests.test_cli_runs import GATED, interlock, run_json

    repo = make_repo(tmp_path / "repo")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = {"SCRIPT": str(script), "LOG": str(tmp_path / "log")}
    folder = str(tmp_path / "repo")
    started = run_json(
        interlock(
            "run", GATED, "--request", "Edit", "--agent", AGENT, "--repo", folder, "--run-id", "g1", "--json", env=env
        )
    )
    opened = started["gate"]["head"]
    with repo.git.custom_environment(**IDENTITY):
        moved = repo.git.commit_tree("interlock/g1^{tree}", "-p", "interlock/g1", "-m", "by hand")
    repo.git.update_ref("refs/heads/interlock/g1", moved)
    refused = interlock("approve", "g1", "--repo", folder, env={**os.environ, **env})
    assert refused.returncode != 0
    said = " ".join((refused.stderr + refused.stdout).split())
    assert f"this approval was for commit `{moved[:7]}`, not for `{opened[:7]}`" in said
    assert run_json(interlock("status", "g1", "--repo", folder, "--json", env=env))["status"] == "gate_wait"


def test_the_readme_says_what_a_local_approval_is_of() -> None:
    # SPEC H5: the sentence the tests above check
    from tests.helpers import doc

    text = " ".join(doc("local/running.md", "operating/service.md").split())
    assert (
        "either is of the run branch's head as it is then, and when the branch moved after the gate opened (a commit "
        "by hand) it is refused, naming both commits, and nothing changes (`route VERDICT` still passes the gate by "
        "hand)"
    ) in text
