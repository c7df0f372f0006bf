"""Locally, a visit refused at an edge (issue 28, part 1; SPEC E2, E3): `status` says where the run stands and
which edge was refused, `route VERDICT` that is no label there is refused listing the choices, and
`route VERDICT --at STAGE` routes from the edge's source."""

from __future__ import annotations

import json
from pathlib import Path

from tests.local.harness import AGENT
from tests.local.test_processes import GRAPH, interlock, setup

LOOP = {**GRAPH, "nodes": [{**GRAPH["nodes"][0], "maxVisits": 5}, {**GRAPH["nodes"][1], "maxVisits": 1}]}


def test_a_refused_visit_is_named_and_each_route_does_what_it_says(tmp_path: Path) -> None:
    script = {f"work:{visit}": {"answer": "VERDICT: PASS", "write": {f"w{visit}.txt": "x"}} for visit in (1, 2, 3)}
    repo, env = setup(tmp_path, {**script, "review": {"answer": "no\nVERDICT: FAIL"}})
    (tmp_path / "graph.json").write_text(json.dumps(LOOP))
    ran = interlock("run", str(tmp_path / "graph.json"), "--request", "Work", "--agent", AGENT, "--run-id", "r",
                    env=env, repo=repo)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    status = " ".join(interlock("status", "r", env=env, repo=repo).stdout.split())
    assert "status escalated at review" in status
    assert (
        "The run stands at `review`, which did not run: its visit 2 was refused on the edge `work` → `review` (PASS). "
        "`route VERDICT` passes `review` as if it had answered VERDICT; `route VERDICT --at work` routes from `work`"
    ) in status
    wrong = interlock("route", "r", "BLOCKED", env=env, repo=repo)
    assert wrong.returncode != 0 and "from 'work', whose edge was refused (`--at work`" in wrong.stderr, wrong.stderr
    prompts = sorted(path.name for path in (tmp_path / "log").glob("*.txt"))
    routed = interlock("route", "r", "PASS", "--at", "work", "--agent", AGENT, env=env, repo=repo)
    assert routed.returncode == 0, routed.stderr
    ran_again = sorted(path.name for path in (tmp_path / "log").glob("*.txt"))
    assert next(name for name in ran_again if name not in prompts) == "0004-review.txt"  # review runs again first
    record = json.loads(interlock("status", "r", "--json", env=env, repo=repo).stdout)
    assert record["decisions"][0]["taken"] == "route PASS at work"
