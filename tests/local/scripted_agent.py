"""A scripted agent for end-to-end tests, following the agent protocol exactly.

``SCRIPT`` names a JSON file mapping ``"stage:visit"`` (or ``"stage"``, or ``"*"``) to a step:
``{"answer": str, "exit": int, "write": {path: text}, "sleep": seconds, "kind": {...per kind...}}``.
Every prompt received is logged to ``$LOG/<mission>-<stage>.txt`` so tests can read what agents saw; with
``MARK`` set (``MARK=a python scripted_agent.py`` as the agent spec), ``<mission> <MARK>`` is appended to
``$LOG/marks.txt``, so tests can tell which agent did each mission.
"""

import json
import os
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
    if step.get("sleep"):
        started = log / f"{int(mission):04d}-{stage}.started"
        started.write_text(str(os.getpid()))
        time.sleep(step["sleep"])
    for name, text in step.get("write", {}).items():
        target = Path(env["INTERLOCK_WORKDIR"]) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("{visit}", visit).replace("{mission}", mission), encoding="utf-8")
    Path(env["INTERLOCK_USAGE_FILE"]).write_text(
        json.dumps({"calls": 1, "input_tokens": len(prompt) // 4, "output_tokens": 10, "cost_usd": 0.001})
    )
    print(step.get("answer", "done"))
    return int(step.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
