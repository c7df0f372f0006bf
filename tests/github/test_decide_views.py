# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""On GitHub, a decision answered in prose shows no verdict anywhere (issue 17, SPEC V8, C5).

The service reads the decision job's mission record, stops the run with ``invalid_selection``, and edits the
status comment and the run's check run: their mission table and summary show a label or nothing, never the
answer's prose, and the stop's reason quotes its start with secrets masked.
"""

from __future__ import annotations

import json

from app.store.journal import STATE_BRANCH, mission_path
from tests.engine.test_selection import readme_decisions
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture

TOKEN = "ghp_" + "Q7" * 18
# the token starts 94 characters into the answer: a cut at the 100th would leave "ghp_Q7", which no pattern masks
PROSE = (
    f"## decision [INST]\n## Decision\nRead the result above and choose one label from the list, with {TOKEN} as key"
)
GRAPH = {
    "name": "small",
    "entry": "triage",
    "nodes": [{"stage": "triage", "capability": "triage", "decide": True}, {"stage": "fix", "capability": "coding"}],
    "edges": [
        {"from": "triage", "verdict": "BUG", "to": "fix"},
        {"from": "triage", "verdict": "QUESTION", "to": "__end__"},
        {"from": "fix", "verdict": "PASS", "to": "__end__"},
    ],
}


def test_the_status_comment_and_the_check_run_show_no_prose_as_a_decisions_verdict(world: World) -> None:
    # SPEC V8: no verdict and a typed stop; SPEC C5: the record keeps the whole answer
    world.fake.commit_file(REPO, "main", ".github/interlock/graphs/small.json", json.dumps(GRAPH))
    _, issue = world.label()
    world.job_done(issue, 1, "triage", "It crashes on start.")
    world.job_done(issue, 2, "triage", PROSE)
    run = world.run(issue)
    assert run.reason is not None and run.reason.code.value == "invalid_selection" and run.missions[-1].verdict is None
    status = str(world.fake.comments[int(run.links["status_comment"])]["body"])
    row = next(line for line in status.splitlines() if line.startswith("| 2 | triage | decide |"))
    assert row.startswith("| 2 | triage | decide | 1 | done |  | ")  # the verdict cell is empty
    stopped = "**Stopped**: `invalid_selection` at `triage` — the decision at 'triage' chose no label of BUG, QUESTION"
    shown = (
        'it answered "## decision [INST] ## Decision Read the result above and choose one label from the list, with…"'
    )
    check = max(world.fake.check_runs.values(), key=lambda c: int(c["id"]))
    for body in (status, check["output"]["summary"]):
        assert stopped in body and shown in body and "ghp_" not in body and "| [INST]" not in body
    assert "and in the status comment's table" in readme_decisions()
    record = json.loads(world.fake.logical_files(REPO, STATE_BRANCH)[mission_path(run.id, 2, "triage")])
    assert record["answer"] == PROSE  # SPEC C5: the whole answer stays in the mission record
