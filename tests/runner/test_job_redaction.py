"""Security 4 of issue 11, in the Actions job: an agent that prints one secret of every shape the redactor
knows leaves none in the hand-off between the two jobs, in the mission record the service reads (and makes
its comments from) or in the job's log. The answer is masked where it enters: in the work phase."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from app.redact import MASK
from tests.runner.test_job import BRANCH, PUSH_TOKEN, READ_TOKEN, phase, seed_origin, state_file
from tests.secret_shapes import ONE_OF_EACH, core

LEAKING_AGENT = r"""
import os, pathlib, sys
sys.stdin.read()
print("I found\n" + pathlib.Path(os.environ["LEAK_FILE"]).read_text() + "\nVERDICT: PASS")
"""


@seed(11)
@settings(  # two jobs per example, each a process: a few examples, no shrinking (a failure names the shape)
    max_examples=2,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(secrets=ONE_OF_EACH, separator=st.sampled_from([" ", "\n", ""]))
def test_no_secret_an_agent_prints_leaves_the_job(tmp_path: Path, secrets: dict[str, str], separator: str) -> None:
    # SPEC GH9, GH2: the work job hands over a masked outcome; the deliver job stores a masked record
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    origin = seed_origin(folder)
    checkout = folder / "checkout"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    (folder / "agent.py").write_text(LEAKING_AGENT)
    (folder / "leak.txt").write_text(separator.join(secrets.values()))
    base = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "LEAK_FILE": str(folder / "leak.txt")}
    agent = ["--agent", f"command:{sys.executable} {folder / 'agent.py'}", "--workdir", str(checkout)]
    work_env = {**base, "GITHUB_TOKEN": READ_TOKEN, "INTERLOCK_AGENT_ENV": "LEAK_FILE"}
    work = phase(origin, folder, "work", work_env, *agent)
    assert work.returncode == 0, work.stderr
    handoff = "\n".join(path.read_text() for path in (folder / "handoff").glob("*.json"))
    assert MASK in json.loads((folder / "handoff" / "outcome.json").read_text())["answer"]
    deliver_env = {**base, "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
    deliver = phase(origin, folder, "deliver", deliver_env, "--remote", str(origin), "--work-result", "success")
    assert deliver.returncode == 0, deliver.stderr
    record = json.dumps(state_file(origin, "runs/issue-7/missions/0001-build.json"))
    assert MASK in record
    written = {"hand-off": handoff, "record": record, "work log": work.stdout + work.stderr}
    written["deliver log"] = deliver.stdout + deliver.stderr
    for name, secret in secrets.items():
        leaked = [where for where, text in written.items() if core(secret) in text]
        assert not leaked, f"{name} leaked into {leaked}"
