"""Issue 11: nothing a person types reaches what a local run stores, prints or prompts, secrets masked.

The counterpart of tests/local/test_redaction.py (an agent's text): here people paste a secret of every shape
the redactor knows (tests/secret_shapes.py) into every kind of text Interlock takes from them — the request
(``run --request-file``: its title and body), an amendment (``amend --note``), an approval's note (``approve
--note``), an answer (``answer --text``), a chosen route (``route``), and the same at the prompts of the ask
mode — and none may be found in the journal (every version of every file on the state branch, every commit
message of every branch: run records, mission records, decision files), in ``status --json``, in anything
printed, or in the prompts the next missions receive. The text is masked where it enters (SPEC GH9).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from app.cli.assemble import cli
from app.engine.graph.validate import parse_graph
from app.engine.record import Status
from app.local.config import GateMode
from app.local.progress import Progress
from app.local.shell import LocalShell
from app.redact import MASK
from tests.helpers import edge, graph, node
from tests.local.harness import AGENT, Bench
from tests.secret_shapes import ONE_OF_EACH, core

GRAPH = graph(
    [node("work", humanGate=True), node("review", "review")],
    [edge("work", "PASS", "review"), edge("review", "PASS", "__end__"), edge("review", "FAIL", "work")],
    entry="work",
)
SCRIPT = {  # the review asks a question, then fails: the run stops for a person to route it
    "work": {"answer": "did it", "write": {"w.txt": "work {mission}"}},
    "review:1:deliver": {"answer": "Which key should I use?\nVERDICT: NEEDS_INPUT"},
    "review": {"answer": "I cannot tell", "exit": 2},
}
SETTINGS = settings(  # a run takes seconds: a few examples, no shrinking (a failure names the shape and path)
    max_examples=2,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
SEPARATORS = st.sampled_from([" ", "\n", "'", '"', "=", ""])


def everything_written(bench: Bench) -> dict[str, str]:
    """Every version of every file the journal ever held and every commit message of every branch (``git log
    --all -p``), and the prompts the agents received."""
    history = bench.repo.git.log("--all", "-p", "--format=commit %H%n%B", "--no-color")
    return {"git history": history, **{f"prompt {name}": text for name, text in bench.prompts().items()}}


def leaks(secrets: dict[str, str], written: dict[str, str]) -> dict[str, list[str]]:
    found = {
        name: [where for where, text in written.items() if core(secret) in text] for name, secret in secrets.items()
    }
    return {name: where for name, where in found.items() if where}


class Typed:
    """The real commands, in this process (typer's runner: the very code ``interlock`` runs), their output kept."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.printed: list[str] = []

    def __call__(self, *args: str) -> str:
        command, *rest = args
        result = CliRunner().invoke(cli, [command, "--repo", str(self.bench.folder), *rest], catch_exceptions=True)
        shown = result.output + (f"\n{result.exception}" if result.exception else "")
        self.printed.append(shown)
        return shown


@seed(11)
@SETTINGS
@given(secrets=ONE_OF_EACH, separator=SEPARATORS)
def test_no_secret_a_person_types_on_the_command_line_is_stored_printed_or_prompted(
    tmp_path: Path, monkeypatch: Any, secrets: dict[str, str], separator: str
) -> None:
    # SPEC GH9 (issue 11): every kind of text a person gives a local run, each with every secret shape
    leak = separator.join(secrets.values())
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    bench = Bench(folder, SCRIPT, monkeypatch)
    (folder / "graph.json").write_text(json.dumps(GRAPH))
    (folder / "request.md").write_text(f"Rotate {leak}\n\nThe old ones were {leak}\n")
    typed = Typed(bench)
    common = ("--agent", AGENT, "--gates", "stop")
    typed("run", str(folder / "graph.json"), "--request-file", str(folder / "request.md"), "--run-id", "r1", *common)
    typed("amend", "r1", "--note", f"use {leak} instead", "--agent", AGENT)
    typed("approve", "r1", "--note", f"and keep {leak}", "--agent", AGENT)
    typed("answer", "r1", "--text", f"the second: {leak}", "--agent", AGENT)
    typed("route", "r1", "--agent", AGENT, "--", leak)  # not a label: refused, and the refusal shows no secret
    typed("route", "r1", "PASS", "--agent", AGENT)
    status = typed("status", "r1", "--json")
    assert json.loads(status)["status"] == Status.AWAITING_MERGE.value, status
    written = {**everything_written(bench), "printed": "\n".join(typed.printed)}
    assert not leaks(secrets, written)
    # every path was taken, each with the secrets masked: the request, the amendment and the approval's note in
    # the prompts that follow, the answer in the review's next prompt, the refused route
    prompts = bench.prompts()
    assert f"Rotate {MASK}" in written["git history"] and f"Rotate {MASK}" in prompts["0001-work"]
    assert f"use {MASK}" in prompts["0002-work"] and f"and keep {MASK}" in prompts["0003-review"]
    assert f"the second: {MASK}" in prompts["0004-review"] and MASK in typed.printed[4]


@seed(12)
@SETTINGS
@given(secrets=ONE_OF_EACH, separator=SEPARATORS)
def test_no_secret_a_person_types_at_the_ask_prompts_is_stored_printed_or_prompted(
    tmp_path: Path, monkeypatch: Any, secrets: dict[str, str], separator: str
) -> None:
    # SPEC GH9: the gate's amendment and note and the answer to a question, typed at the prompts of --gates ask
    leak = separator.join(secrets.values())
    bench = Bench(Path(tempfile.mkdtemp(dir=tmp_path)), SCRIPT, monkeypatch)
    replies = iter(["m", f"use {leak} instead", "a", f"and keep {leak}", f"the second: {leak}"])
    printed, asked = io.StringIO(), io.StringIO()

    def ask(question: str) -> str:
        asked.write(question)
        return next(replies, "")

    shell = LocalShell(bench.folder, bench.config, GateMode.ASK, Progress(printed), ask)
    run = shell.start(parse_graph(GRAPH), f"Rotate {leak}", f"The old ones were {leak}", "r1")
    written = {**everything_written(bench), "printed": printed.getvalue(), "asked": asked.getvalue()}
    assert not leaks(secrets, written)
    prompts = bench.prompts()
    assert f"use {MASK}" in prompts["0002-work"] and f"the second: {MASK}" in prompts["0004-review"]
    assert run.status is Status.FAILED, run.status  # the review failed after the answer: every prompt was asked
