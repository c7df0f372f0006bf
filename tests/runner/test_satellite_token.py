"""A private satellite, or one of another account (issue 28 part 5; SPEC U7, GH2): the job's own token reaches
only its repository, so the action's ``satellite-token`` (an installation token of the satellites' account, made
with ``actions/create-github-app-token``) clones the satellite in the work job and pushes to it in the deliver
job. It travels to the isolated work process on the pipe, never in an environment, and the agent never has it.
Over real HTTP (tests/git_http.py), the satellite answering only that token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.git_http import serve_git
from tests.runner.test_job import BRANCH, PUSH_TOKEN, READ_TOKEN, git, phase, state_file
from tests.runner.test_partial_clone import header
from tests.runner.test_satellite_job import RECORD, SATELLITE, seed_main, seed_satellite

SATELLITE_TOKEN = "ghs_satellite0123456789abcdefghijklmnop"
AGENT = r"""
import json, os, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path(os.environ["SEEN"]).write_text(json.dumps(dict(os.environ)))
where = next(line.split(": ", 1)[1] for line in prompt.splitlines() if line.startswith("- octo/docs: "))
pathlib.Path(where, "guide.md").write_text("# the new guide\n")
print("Wrote the guide.\nVERDICT: PASS")
"""


def test_a_private_satellite_is_cloned_and_pushed_with_the_satellite_token_only(tmp_path: Path) -> None:
    origin, docs = seed_main(tmp_path, [SATELLITE]), seed_satellite(tmp_path)
    for bare in (origin, docs):
        git(bare, "config", "http.receivepack", "true")
    (tmp_path / "agent.py").write_text(AGENT)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "seen.json")}
    base |= {"INTERLOCK_AGENT_ENV": "SEEN", "INTERLOCK_SATELLITE_TOKEN": SATELLITE_TOKEN}
    with serve_git(tmp_path, token=READ_TOKEN) as (url, server):
        server.tokens.add(PUSH_TOKEN)
        server.only[f"/{SATELLITE}.git"] = {SATELLITE_TOKEN}  # neither the job's read nor its write token
        checkout = tmp_path / "checkout"
        auth = ["-c", f"http.extraheader={header(READ_TOKEN)}"]
        subprocess.run(
            ["git", *auth, "clone", "--quiet", "-b", BRANCH, f"{url}/me/origin.git", str(checkout)], check=True
        )
        agent = ("--agent", f"command:{sys.executable} {tmp_path / 'agent.py'}", "--workdir", str(checkout))
        work = phase(origin, tmp_path, "work", {**base, "GITHUB_TOKEN": READ_TOKEN}, *agent)
        assert work.returncode == 0, work.stderr
        assert SATELLITE_TOKEN not in (tmp_path / "seen.json").read_text()  # the agent's environment lacks it
        deliver_env = {**base, "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
        deliver = phase(
            origin, tmp_path, "deliver", deliver_env, "--remote", f"{url}/me/origin.git", "--work-result", "success"
        )
        assert deliver.returncode == 0, deliver.stderr
        assert SATELLITE_TOKEN not in work.stdout + work.stderr + deliver.stdout + deliver.stderr
    assert git(docs, "show", f"{BRANCH}:guide.md") == "# the new guide"
    assert state_file(origin, RECORD)["satellites"][SATELLITE]["commits"] == 1
