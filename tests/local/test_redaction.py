"""Security 4 of issue 11: nothing a local run stores or prints carries a secret an agent printed.

A real scripted agent, in a real local run on a real repository, plants one secret of every shape the
redactor knows (tests/secret_shapes.py) in each of its answers — the work mission's, the check's output (a
file the agent wrote), the decision's, a question for a person, a failure's, the advisor's instruction — and
none of them may be found anywhere Interlock writes: the run record, the mission records, the decision file,
the graph and every other file of the journal, the prompts the next missions receive, the progress lines and
questions printed, and ``interlock status --json``. The answers are masked where they enter (SPEC GH9).
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from app.engine.graph.validate import parse_graph
from app.engine.record import ReasonCode, Status
from app.local.config import GateMode
from app.local.progress import Progress
from app.local.shell import LocalShell
from app.redact import MASK
from app.store.layout import logical
from tests.helpers import edge, graph, node
from tests.local.harness import AGENT, Bench
from tests.secret_shapes import ONE_OF_EACH, core

GRAPH = parse_graph(
    graph(
        [
            node("work"),
            node("test", "testing", check="cat leak.txt"),
            node("triage", "triage", decide=True),
            node("review", "review"),
        ],
        [
            edge("work", "PASS", "test"),
            edge("test", "PASS", "triage"),
            edge("triage", "PASS", "review"),
            edge("review", "PASS", "__end__"),
        ],
        entry="work",
    )
)


def script(leak: str) -> dict[str, Any]:
    """Every kind of answer the run reads, each carrying the secrets."""
    return {
        "work": {"answer": f"done, I used\n{leak}", "write": {"leak.txt": f"found:\n{leak}\n"}},
        "triage:1:deliver": {"answer": f"looks fine {leak}"},
        "triage:1:decide": {"answer": f"VERDICT: PASS\n{leak}"},
        "review:1:deliver": {"answer": f"Which of these keys?\n{leak}\nVERDICT: NEEDS_INPUT"},
        "review:1:advisor": {"answer": f"Revise: use {leak} instead"},  # its instruction is in the next prompt
        "review:2:advisor": {"answer": f"Escalate, the keys {leak} are wrong"},
        "review": {"answer": f"Traceback: {leak}", "exit": 2},
    }


def journal(bench: Bench) -> dict[str, str]:
    """Every file Interlock stored on its state branch, by its logical path (journal layout v2 buckets some)."""
    names = bench.repo.git.ls_tree("-r", "--name-only", "interlock/state").splitlines()
    return {logical(name): bench.repo.git.show(f"interlock/state:{name}") for name in names}


def status_json(bench: Bench, run_id: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "app", "status", run_id, "--repo", str(bench.folder), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@seed(11)
@settings(  # a run takes a second or two: a few examples, and no shrinking (a failure names the shape and path)
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(secrets=ONE_OF_EACH, separator=st.sampled_from([" ", "\n", "'", '"', "=", ""]))
def test_no_secret_an_agent_prints_is_stored_or_printed(
    tmp_path: Path, monkeypatch: Any, secrets: dict[str, str], separator: str
) -> None:
    # SPEC GH9 (issue 11, security 4): one redactor, at the boundary where an agent's text enters; each
    # example sets the agent's SCRIPT and LOG anew, so sharing the function's fixtures is safe
    leak = separator.join(secrets.values())
    bench = Bench(Path(tempfile.mkdtemp(dir=tmp_path)), script(leak), monkeypatch, advisor=AGENT)
    printed, asked = io.StringIO(), io.StringIO()

    def ask(question: str) -> str:
        asked.write(question)
        return "use the second one"

    shell = LocalShell(bench.folder, bench.config, GateMode.ASK, Progress(printed), ask)
    run = shell.start(GRAPH, "Rotate the keys", "")
    stored = journal(bench)
    written = {
        **stored,
        "printed": printed.getvalue(),
        "asked": asked.getvalue(),
        "status --json": status_json(bench, run.id),
        **{f"prompt {name}": text for name, text in bench.prompts().items()},
    }
    for name, secret in secrets.items():
        leaked = [where for where, text in written.items() if core(secret) in text]
        assert not leaked, f"{name} leaked into {leaked}"
    assert run.status is Status.FAILED and run.reason is not None and run.reason.code is ReasonCode.MISSION_FAILED
    # every path was taken, the secrets masked in it: the check's output, the decision's answer, the question
    # asked, the advisor's instruction in the next prompt, the reason in the decision file and the last line
    runs = f"runs/{run.id}"
    for where in ("missions/0002-test.json", "missions/0004-triage.json", "decision.md"):
        assert MASK in stored[f"{runs}/{where}"], where
    assert f"Advisor's instruction: use {MASK}" in written["prompt 0008-review"]
    assert f"Which of these keys?\n{MASK}" in written["asked"]
    assert f"mission_failed at review: mission #8 at 'review' ended failed: Traceback: {MASK}" in written["printed"]
    assert f"Traceback: {MASK}" in written["status --json"]
