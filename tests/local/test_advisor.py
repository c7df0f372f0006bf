"""The advisor on disk (SPEC E4): a mission that ends badly asks the configured advisor program once, and its
answer — retry, revise with an instruction, escalate — is applied; an advisor that is off, slow, crashing or
talking nonsense changes nothing: the run goes to a person as it would without one."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.engine.record import Category, MissionKind, MissionStatus, ReasonCode, Run, Status
from app.local.config import ConfigError, load_config
from tests.local.harness import Bench
from tests.local.test_runs import LOOP

ADVISOR = r"""
import json, os, pathlib, sys, time
question = sys.stdin.read()
log = pathlib.Path(os.environ["LOG"])
log.mkdir(parents=True, exist_ok=True)
(log / "advisor-question.md").write_text(question)
(log / "advisor.pid").write_text(str(os.getpid()))
pathlib.Path(os.environ["INTERLOCK_USAGE_FILE"]).write_text(json.dumps({"calls": 1, "cost_usd": 0.002}))
pathlib.Path("advisor-scribble.txt").write_text("an advisor edits nothing")
mode = sys.argv[1]
if mode == "slow":
    time.sleep(30)
answers = {
    "retry": "Retry: the disk is free again.",
    "revise": "revise\nWrite the smaller version first.",
    "escalate": "escalate",
    "nonsense": "I am not sure, maybe look at the logs?",
    "crash": "retry",
    "slow": "retry",
}
print(answers[mode])
sys.exit(3 if mode == "crash" else 0)
"""
FAILS_ONCE = {
    "work:1": {"answer": "Traceback: disk full", "exit": 2},
    "work": {"answer": "did it", "write": {"src/work.txt": "work of mission {mission}"}},
    "review": {"answer": "VERDICT: PASS"},
}


def bench_with_advisor(tmp_path: Path, monkeypatch: Any, mode: str | None, **config: Any) -> Bench:
    script = tmp_path / "advisor.py"
    script.write_text(ADVISOR)
    advisor = f"{sys.executable} {script} {mode}" if mode else None
    return Bench(tmp_path, FAILS_ONCE, monkeypatch, advisor=advisor, **config)


def kinds(run: Run) -> list[tuple[str, MissionKind, MissionStatus | None, str | None]]:
    return [(m.stage, m.kind, m.status, m.verdict) for m in run.missions]


def test_retry_reruns_the_mission_which_then_succeeds(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC E4, P3: asked once, its answer applied, its usage on the advisor's ledger line
    bench = bench_with_advisor(tmp_path, monkeypatch, "retry")
    run = bench.shell().start(LOOP, "Do the work", "")
    assert run.status is Status.AWAITING_MERGE
    assert kinds(run) == [
        ("work", MissionKind.DELIVER, MissionStatus.FAILED, None),
        ("work", MissionKind.ADVISOR, MissionStatus.DONE, "retry"),
        ("work", MissionKind.RETRY, MissionStatus.DONE, "PASS"),
        ("review", MissionKind.DELIVER, MissionStatus.DONE, "PASS"),
    ]
    question = (tmp_path / "log" / "advisor-question.md").read_text()
    assert "ended failed" in question and "Traceback: disk full" in question and "retry, revise or escalate" in question
    advisor_line = run.ledger.by_category[Category.ADVISOR]
    assert (advisor_line.calls, advisor_line.attempts, advisor_line.cost_usd) == (1, 0, 0.002)
    record = json.loads(bench.show(f"interlock/state:runs/{run.id}/missions/0002-work.json"))
    assert record["kind"] == "advisor" and record["answer"].startswith("Retry:") and "ended failed" in record["prompt"]
    assert "advisor-scribble.txt" not in bench.repo.git.ls_tree("-r", "--name-only", run.branch)


def test_revise_puts_the_instruction_in_the_next_missions_prompt(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC E4
    bench = bench_with_advisor(tmp_path, monkeypatch, "revise")
    run = bench.shell().start(LOOP, "Do the work", "")
    assert run.status is Status.AWAITING_MERGE and run.missions[2].kind is MissionKind.RETRY
    assert "Advisor's instruction: Write the smaller version first." in bench.prompts()["0003-work"]


@pytest.mark.parametrize(
    ("mode", "verdict", "status"),
    [
        ("escalate", "escalate", MissionStatus.DONE),  # the advisor hands it to a person
        ("nonsense", None, MissionStatus.DONE),  # no advice in it: the default stands
        ("crash", None, MissionStatus.FAILED),  # "retry" printed, but the advisor exited 3: no advice
    ],
)
def test_escalate_nonsense_or_a_crash_hand_the_run_to_a_person(
    tmp_path: Path, monkeypatch: Any, mode: str, verdict: str | None, status: MissionStatus
) -> None:
    # SPEC E4: an advisor that gives no usable advice changes nothing
    bench = bench_with_advisor(tmp_path, monkeypatch, mode)
    run = bench.shell().start(LOOP, "Do the work", "")
    assert run.status is Status.FAILED and run.reason.code is ReasonCode.MISSION_FAILED  # type: ignore[union-attr]
    assert "Traceback: disk full" in run.reason.message  # type: ignore[union-attr]
    assert kinds(run)[1:] == [("work", MissionKind.ADVISOR, status, verdict)]
    assert list(bench.prompts()) == ["0001-work"]  # nothing re-ran
    assert bench.show(f"interlock/state:runs/{run.id}/decision.md").startswith("# Decision needed")


def test_a_slow_advisor_is_killed_at_its_timeout_and_the_default_stands(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC E4: advisor_timeout_s bounds the advisor (60 s unless configured)
    bench = bench_with_advisor(tmp_path, monkeypatch, "slow", advisor_timeout_s=1)
    began = time.monotonic()
    run = bench.shell().start(LOOP, "Do the work", "")
    assert time.monotonic() - began < 10
    assert run.status is Status.FAILED and kinds(run)[1:] == [
        ("work", MissionKind.ADVISOR, MissionStatus.TIMEOUT, None)
    ]
    pid = int((tmp_path / "log" / "advisor.pid").read_text())
    assert not alive(pid)  # killed, not left sleeping


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs: a killed process whose parent is gone may linger as a zombie until reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_without_an_advisor_it_is_never_asked(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC E4: no advisor configured, the run goes to a person at once
    bench = bench_with_advisor(tmp_path, monkeypatch, None)
    run = bench.shell().start(LOOP, "Do the work", "")
    assert run.status is Status.FAILED and not run.advisor
    assert [m.kind for m in run.missions] == [MissionKind.DELIVER] and Category.ADVISOR not in run.ledger.by_category
    assert not (tmp_path / "log" / "advisor-question.md").exists()


def test_advisor_settings_are_checked_when_the_config_is_read(tmp_path: Path) -> None:
    config = tmp_path / "interlock.yml"
    config.write_text("advisor: ''\nadvisor_timeout_s: 0\n")
    with pytest.raises(ConfigError, match=r"advisor: .*advisor_timeout_s: "):
        load_config(config)
    config.write_text("advisor: ./advise.sh\nadvisor_timeout_s: 5\n")
    assert (load_config(config).advisor, load_config(config).advisor_timeout_s) == ("./advise.sh", 5)
