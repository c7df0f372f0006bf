"""``interlock validate --cost`` and ``interlock simulate`` as a user runs them: real processes (SPEC G7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import GRAPHS, doc
from tests.test_cli import FEATURE, interlock

TRIAGE = str(GRAPHS / "operations" / "triage.json")
CHEAPEST = "plan:PASS → implement:PASS → test:PASS → review:PASS → __end__ (4 missions, 3 model calls, 3 units)"


def test_validate_cost_prints_the_worst_case_and_the_cheapest_path() -> None:
    # SPEC G7: 4 nodes; plan 2 visits, implement 4, test 4 (a check), review 3; with an advisor every visit may
    # take a mission, a re-ask and the advisor's call; the check re-runs never (PASS and FAIL both route)
    result = interlock("validate", "--cost", FEATURE)
    assert result.returncode == 0, result.stderr
    assert "worst case: at most 22 missions, 31 model calls, 31 units (with an advisor)" in result.stdout
    assert f"cheapest path: {CHEAPEST}" in result.stdout
    assert "not counted: what people start (amendments" in result.stdout


def test_validate_cost_json_gives_each_file_its_cost() -> None:
    # SPEC G7
    result = interlock("validate", "--cost", "--json", FEATURE, TRIAGE)
    files = {entry["path"]: entry for entry in json.loads(result.stdout)["files"]}
    cost = files[FEATURE]["cost"]
    assert cost["worst"] == {"missions": 22, "calls": 31, "units": 31.0}
    assert [hop["stage"] for hop in cost["cheapest"]["path"]] == ["plan", "implement", "test", "review"]
    assert cost["cheapest"]["path"][2]["charges"] == ["check"]
    assert (cost["cheapest"]["missions"], cost["cheapest"]["calls"]) == (4, 3)
    triage = files[TRIAGE]["cost"]["cheapest"]  # a decision: the mission and the decision's call
    assert [(hop["verdict"], hop["charges"]) for hop in triage["path"]] == [("DUPLICATE", ["deliver", "decide"])]


def test_simulate_walks_the_graph_on_the_given_verdicts_and_prints_path_visits_ledger_and_status() -> None:
    # SPEC G7: unspecified stages and used-up lists answer PASS; the gate is approved; the check's verdict is
    # its exit code (no model call)
    result = interlock("simulate", FEATURE, "--verdicts", "review=FAIL,PASS", "--verdicts", "test=fail")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    path = [line.strip() for line in lines[lines.index("path:") + 1 : lines.index("path:") + 10]]
    assert path == [
        "1. plan (visit 1) --PASS--> implement (gate approved by simulation)",
        "2. implement (visit 1) --PASS--> test",
        "3. test (visit 1) --FAIL--> implement",
        "4. implement (visit 2) --PASS--> test",
        "5. test (visit 2) --PASS--> review",
        "6. review (visit 1) --FAIL--> implement",
        "7. implement (visit 3) --PASS--> test",
        "8. test (visit 3) --PASS--> review",
        "9. review (visit 2) --PASS--> __end__",
    ]
    assert "visits: plan 1/2, implement 3/4, test 3/4, review 2/3" in lines
    assert "ledger: 9 missions, 6 model calls, 6 units" in lines
    assert "  check: 3 missions, 0 model calls, 0 units" in lines
    assert lines[-1] == "final: awaiting_merge at the end"


def test_simulate_json_and_a_run_stopped_by_its_visit_budget() -> None:
    # SPEC G7, B1: three FAILs of review send the run round the loop until review's fourth entry escalates
    result = interlock("simulate", FEATURE, "--verdicts", "review=FAIL,FAIL,FAIL", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert (report["finished"], report["status"], report["stage"]) == (False, "escalated", "review")
    assert report["reason"]["code"] == "visit_budget_exhausted"
    assert report["visits"]["review"] == {"visits": 4, "budget": 3}
    assert [hop["verdict"] for hop in report["path"] if hop["stage"] == "review"] == ["FAIL"] * 3
    assert report["ledger"]["missions"] == 12 and report["ledger"]["by_category"]["check"]["calls"] == 0


def test_simulate_mermaid_shows_the_visit_counts() -> None:
    # SPEC G7, W4
    result = interlock("simulate", FEATURE, "--verdicts", "test=FAIL", "--mermaid")
    assert result.returncode == 0
    assert result.stdout.startswith("flowchart TD")
    assert "visits 2/4" in result.stdout and "visits 1/3" in result.stdout


def test_simulate_stops_at_the_first_gate_with_gates_stop_and_a_decision_takes_its_verdict() -> None:
    # SPEC G7, H1, V8
    stopped = interlock("simulate", FEATURE, "--gates", "stop")
    assert stopped.returncode == 1
    assert "final: gate_wait at 'plan' (stopped at the gate of 'plan': --gates stop)" in stopped.stdout
    decided = interlock("simulate", TRIAGE, "--verdicts", "triage=question")
    assert decided.returncode == 0
    assert "1. triage (visit 1) --QUESTION--> answer" in decided.stdout
    assert "ledger: 2 missions, 3 model calls, 3 units" in decided.stdout  # the decision is a call, no mission
    undecided = interlock("simulate", TRIAGE)  # PASS is no answer of triage's: the engine's escalation shows it
    assert undecided.returncode == 1 and "invalid_selection" in undecided.stdout
    assert "note: stage 'triage' cannot answer PASS; give it verdicts, e.g. --verdicts triage=BUG" in undecided.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--verdicts", "nowhere=PASS"], "error: graph 'feature' has no stage 'nowhere'; stages: plan, implement"),
        (["--verdicts", "test=MAYBE"], "error: stage 'test' cannot answer 'MAYBE': its verdicts are PASS, FAIL"),
        (["--verdicts", "review"], "error: --verdicts takes stage=VERDICT,VERDICT…; cannot read 'review'"),
        (["--verdicts", "review=PASS,,FAIL"], "cannot read 'review=PASS,,FAIL'"),
        (["--verdicts", "review=FAIL", "--verdicts", "review=PASS"], "stage 'review' is given --verdicts twice"),
    ],
)
def test_simulate_refuses_bad_verdicts_in_one_line(args: list[str], message: str) -> None:
    # SPEC G7: bad input is a clear one-line error, exit 2, nothing simulated
    result = interlock("simulate", FEATURE, *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_the_policy_stops_a_simulated_run_as_it_stops_a_real_one(tmp_path: Path) -> None:
    # SPEC G7, P2: the engine's own budgets apply: the third call is refused before it is made
    data = json.loads(Path(FEATURE).read_text())
    data["policy"] = {"maxCalls": 2}
    capped = tmp_path / "capped.json"
    capped.write_text(json.dumps(data))
    report = json.loads(interlock("simulate", str(capped), "--json").stdout)
    assert (report["status"], report["reason"]["code"]) == ("escalated", "call_budget_exhausted")
    assert report["ledger"]["calls"] == 2 and report["stage"] == "review"


def test_the_readme_says_what_validate_cost_and_simulate_do() -> None:
    # SPEC G7: each sentence of the README's section, checked by the tests above and in tests/engine/test_cost_bound.py
    text = " ".join(doc("graphs/validation.md", "reference/validation-codes.md").split())
    for words in [
        "`interlock validate --cost GRAPH` prints, for each valid graph, the worst case of any run and the cheapest "
        "path to `__end__` with its cost, in missions, model calls and units (SPEC G7); with `--json`, each file's "
        "report gains a `cost` object.",
        "a visit is its mission, at most one re-ask, a `decide` node's decision call and, when a mission ends badly, "
        "the advisor's call; a check is a mission with no model call and no units; each node is visited at most "
        "`maxVisits` times.",
        "The figures come from the engine's own charges:",
        "The worst case is an upper bound, assuming an advisor.",
        "What people start is not counted, and the report says so",
        "The status comment and the web board show the worst case of the run's graph, for the run's unit costs and "
        "advisor.",
        "`interlock simulate GRAPH` walks a graph with no model: each `--verdicts stage=V1,V2,…` gives a stage its "
        "verdicts in turn, and a stage without one, or whose list has run out, answers PASS.",
        "Every answer is applied by the engine's own transition, as in a real run,",
        "A check's verdict is its exit code, and a `decide` node's verdict is its decision's answer.",
        "Gates are approved; `--gates stop` stops at the first one.",
        "so the budgets and visit limits stop a simulated run as they stop a real one.",
        "It prints the path, the visits, the ledger and the final status; `--json` prints them as JSON, and "
        "`--mermaid` prints the picture with visit counts.",
        "It exits 0 when the run reaches `__end__` and 1 when it does not.",
        "An unknown stage, a verdict the stage cannot give or a malformed `--verdicts` is refused in one line, exit 2.",
        "| `cannot-finish` | the policy's `maxAttempts`, `maxCalls` or `maxUnits` is below what the "
        "cheapest path to `__end__` takes",
        "| `useless-limit` | a policy limit above the worst case of any run: it never stops a run |",
    ]:
        assert words in text, words
    # the example output in the README is what the command prints
    shown = interlock("validate", "--cost", FEATURE).stdout
    readme = doc("graphs/validation.md")
    start = readme.index("interlock validate --cost graphs/delivery/feature.json\n")
    example = [line.removeprefix("#").strip() for line in readme[start:].splitlines()[1:3]]
    assert all(line in shown for line in example) and example[0].startswith("worst case")


def test_a_simulation_longer_than_its_event_cap_ends_with_why_not_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC G7: a valid graph whose visit budgets allow more events than a simulation takes (a PASS cycle with
    # maxVisits 100000 needs 200000 missions) ends not finished, exit 1, saying where and why; it was an internal
    # error (RuntimeError, exit 70). The cap is lowered here so that the test is fast.
    from typer.testing import CliRunner

    from app.cli.assemble import cli
    from app.engine.graph import simulate

    cycle = {
        "name": "cycle",
        "entry": "a",
        "nodes": [
            {"stage": "a", "capability": "implement", "maxVisits": 100000},
            {"stage": "b", "capability": "review", "maxVisits": 100000},
        ],
        "edges": [
            {"from": "a", "verdict": "PASS", "to": "b"},
            {"from": "b", "verdict": "PASS", "to": "a"},
            {"from": "b", "verdict": "FAIL", "to": "__end__"},
        ],
    }
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(cycle))
    monkeypatch.setattr(simulate, "MAX_EVENTS", 40)
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 1, result.output
    assert "final: running at 'a' (the simulation gave up after 40 events" in result.stdout
    shown = CliRunner().invoke(cli, ["simulate", str(path), "--json"])
    assert shown.exit_code == 1 and json.loads(shown.stdout)["gave_up_after"] == 40
