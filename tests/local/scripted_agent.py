"""A scripted agent for end-to-end tests, following the agent protocol exactly.

``SCRIPT`` names a JSON file mapping ``"stage:visit"`` (or ``"stage"``, or ``"*"``) to a step:
``{"answer": str, "exit": int, "write": {path: text}, "sleep": seconds, "kind": {...per kind...}}``,
and for the kill tests ``"runaway": seconds`` (an agent whose runner dies while it sleeps goes on writing its
files that long), ``"until": path`` (a ``sleep`` that ends early once that file exists) and ``"alone": true``
(an agent of an earlier mission still alive as this one starts is written down in ``$LOG/overlaps.txt``).
Every prompt received is logged to ``$LOG/<mission>-<stage>.txt`` so tests can read what agents saw; with
``MARK`` set (``MARK=a python scripted_agent.py`` as the agent spec), ``<mission> <MARK>`` is appended to
``$LOG/marks.txt``, so tests can tell which agent did each mission.
"""

import json
import os
import select
import sys
import time
from pathlib import Path


def main() -> int:
    prompt = sys.stdin.read()
    env = os.environ
    stage, visit, mission, kind = (
        env["INTERLOCK_STAGE"],
        env["INTERLOCK_VISIT"],
        env["INTERLOCK_MISSION"],
        env["INTERLOCK_KIND"],
    )
    log = Path(env["LOG"])
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{int(mission):04d}-{stage}.txt").write_text(prompt, encoding="utf-8")
    if env.get("MARK"):
        with (log / "marks.txt").open("a", encoding="utf-8") as marks:
            marks.write(f"{mission} {env['MARK']}\n")
    assert Path(env["INTERLOCK_PROMPT_FILE"]).read_text(encoding="utf-8") == prompt
    script = json.loads(Path(env["SCRIPT"]).read_text(encoding="utf-8"))
    step = (
        script.get(f"{stage}:{visit}:{kind}")
        or script.get(f"{stage}:{visit}")
        or script.get(f"{stage}:{kind}")
        or script.get(stage)
        or script.get("*")
        or {}
    )
    if step.get("alone"):
        note_overlaps(log, mission)
    if step.get("sleep"):
        started = log / f"{int(mission):04d}-{stage}.started"
        started.write_text(str(os.getpid()))
        work(step, env, started)
    write(step, env, visit, mission)
    Path(env["INTERLOCK_USAGE_FILE"]).write_text(
        json.dumps({"calls": 1, "input_tokens": len(prompt) // 4, "output_tokens": 10, "cost_usd": 0.001})
    )
    print(step.get("answer", "done"))
    return int(step.get("exit", 0))


def work(step: dict, env: os._Environ[str], started: Path) -> None:
    """Sleep ``sleep`` seconds, or until the file ``until`` names exists. With ``runaway`` set, an agent whose
    runner died meanwhile goes on as a runaway for that many seconds more, rewriting its files in the worktree,
    as a real agent would."""
    end = time.monotonic() + step["sleep"]
    while time.monotonic() < end:
        time.sleep(0.02)
        if step.get("until") and Path(step["until"]).exists():
            return
        if step.get("runaway") and runner_gone():
            started.with_suffix(".runaway").write_text(str(os.getpid()))
            end = time.monotonic() + step["runaway"]
            while time.monotonic() < end:
                write(step, env, "runaway", "runaway")
                time.sleep(0.02)


def runner_gone() -> bool:
    """True once nothing reads this agent's output any more: the runner died (the agent's parent is
    ``/bin/sh``, which outlives it, so the parent id says nothing)."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def write(step: dict, env: os._Environ[str], visit: str, mission: str) -> None:
    for name, text in step.get("write", {}).items():
        target = Path(env["INTERLOCK_WORKDIR"]) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("{visit}", visit).replace("{mission}", mission), encoding="utf-8")


def note_overlaps(log: Path, mission: str) -> None:
    """Append to ``$LOG/overlaps.txt`` every agent of an earlier mission still alive as this one starts:
    two agents in one worktree at once (a live, non-zombie process in ``/proc``)."""
    for started in sorted(log.glob("*.started")):
        pid = int(started.read_text() or 0)
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and pid != os.getpid():
            with (log / "overlaps.txt").open("a", encoding="utf-8") as overlaps:
                overlaps.write(f"mission {mission} started while {started.name} (pid {pid}) was alive\n")


if __name__ == "__main__":
    sys.exit(main())
