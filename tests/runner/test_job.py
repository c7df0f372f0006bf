"""``interlock step`` as an Actions job runs it: a real process in a clone of a real bare repository.

The origin holds `develop`, the run branch and the state branch with the run record and the mission's
order, exactly as the service saves them; the agent is a small script following the agent protocol.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.agents.environment import AgentEnvError, agent_keys, allowed_environment, parse_names
from app.engine.effects import DispatchMission
from app.engine.events import Start
from app.engine.graph.validate import parse_graph
from app.engine.step import step
from app.redact import MASK, Redactor
from app.runner.orders import mission_order
from app.runner.remote import Remote
from app.store.journal import STATE_BRANCH, encode_json, encode_record, order_path, record_path
from app.store.layout import V1, V2, layout_file, layout_path, placed
from tests.helpers import edge, graph, node

RUN = "issue-7"
BRANCH = f"interlock/{RUN}"
PUSH_TOKEN = "ghs_pushpushpushpushpushpush1234"
READ_TOKEN = "ghs_readreadreadreadreadread5678"
API_KEY = "sk-ant-secretsecretsecretsecret42"

AGENT = r"""
import json, os, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path(os.environ["SEEN"]).write_text(json.dumps({"env": dict(os.environ), "prompt": prompt}))
mode = os.environ.get("MODE", "work")
if mode == "crash":
    print("segfault-ish"); sys.exit(3)
if mode == "workflow":
    pathlib.Path(".github/workflows").mkdir(parents=True)
    pathlib.Path(".github/workflows/steal.yml").write_text("on: push\n")
if mode == "hook":
    hook = pathlib.Path(".git/hooks/post-commit")
    hook.write_text("#!/bin/sh\nenv > " + os.environ["SEEN"] + ".hook\n")
    hook.chmod(0o755)
if mode == "filter":  # a config line git obeys: the clean filter runs when Interlock's git adds the files
    import subprocess
    subprocess.run(["git", "config", "filter.spy.clean", "env > " + os.environ["SEEN"] + ".filter; cat"], check=True)
    pathlib.Path(".gitattributes").write_text("* filter=spy\n")
if mode == "rewrite":
    import subprocess
    subprocess.run(["git", "reset", "--quiet", "--hard", "HEAD~1"], check=True)
pathlib.Path("hello.txt").write_text("hello\n")
if mode == "caches":
    for name in ("__pycache__/m.cpython-311.pyc", "pkg/__pycache__/x.pyc", ".venv/bin/python", ".ruff_cache/x",
                 "node_modules/left-pad/index.js", "tracked.pyc"):
        pathlib.Path(name).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(name).write_text("made by the agent")
if mode == "leak":
    print("I found " + os.environ.get("ANTHROPIC_API_KEY", "") + " and ghp_abcdefghijklmnopqrstuvwxyz0123")
print("Added hello.txt\nVERDICT: PASS")
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def seed_origin(
    tmp_path: Path,
    nodes: list[dict[str, Any]] | None = None,
    stop: bool = False,
    files: dict[str, str] | None = None,
    layout: int = V1,
) -> Path:
    """A bare origin with `develop` (README.md and ``files``: no .gitignore), the run branch (an empty start
    commit) and the state branch holding the run record and the first mission's order, as the service saves
    them, in journal ``layout`` (v1: as an Interlock before v2 did)."""
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "develop", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(seed)], check=True, capture_output=True)
    remote = Remote(seed)
    for name, text in {"README.md": "# demo\n", **(files or {})}.items():
        (seed / name).write_text(text)
        remote.git("add", "--force", name)
    remote.git("commit", "--quiet", "-m", "initial")
    remote.git("push", "--quiet", "origin", "HEAD:refs/heads/develop")
    remote.git("commit", "--quiet", "--allow-empty", "-m", "interlock: start")
    remote.git("push", "--quiet", "origin", f"HEAD:refs/heads/{BRANCH}")
    nodes = nodes or [node("build"), node("review", "review")]
    g = parse_graph(graph(nodes, [edge("build", "PASS", "review")], entry="build"))
    start = Start(key="s", at=datetime(2026, 11, 30, tzinfo=UTC), run_id=RUN, title="Add hello", body="Say hi.")
    run, effects = step(None, start, g)
    dispatch = next(e for e in effects if isinstance(e, DispatchMission))
    files = {
        record_path(RUN): encode_record(run.but(stop_requested=stop)),
        order_path(RUN, dispatch.seq, dispatch.stage): encode_json(mission_order(dispatch)),
    }
    if layout == V2:
        files = {placed(path, V2): data for path, data in files.items()} | {layout_path(RUN): layout_file(V2)}
    remote.add_files(STATE_BRANCH, files, "interlock: start run")
    return bare


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return seed_origin(tmp_path)


def job(
    origin: Path, tmp_path: Path, mission: int = 1, mode: str = "work"
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A job: clone on the run branch (as actions/checkout does), then `interlock step` in a new process."""
    checkout = tmp_path / f"job-{mission}-{mode}"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN,
        "GITHUB_TOKEN": PUSH_TOKEN,
        "INTERLOCK_READ_TOKEN": READ_TOKEN,
        "ANTHROPIC_API_KEY": API_KEY,
        "ACTIONS_RUNTIME_TOKEN": "runtime-secret-value",
        "SEEN": str(tmp_path / "seen.json"),
        "MODE": mode,
        "INTERLOCK_AGENT_ENV": "SEEN, MODE, ANTHROPIC_API_KEY",  # the test agent's own settings, passed by name
    }
    argv = [
        sys.executable,
        "-c",
        "from app.cli import main; main()",
        "step",
        "--run",
        RUN,
        "--mission",
        str(mission),
    ]
    argv += ["--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120), checkout


def state_file(origin: Path, path: str) -> Any:
    """The state branch's file of logical ``path``, where the run's journal layout puts it (app/store/layout.py):
    the seed writes v1, as an Interlock before v2 did; the job's first write moves the run to v2."""
    for where in dict.fromkeys((placed(path, V2), path)):
        raw = subprocess.run(["git", "--git-dir", str(origin), "show", f"{STATE_BRANCH}:{where}"], capture_output=True)
        if raw.returncode == 0:
            return json.loads(raw.stdout)
    return None


def test_the_job_commits_pushes_and_stores_the_mission_record(origin: Path, tmp_path: Path) -> None:
    # SPEC GH2, GH3: the runner commits and pushes the agent's work; the record is stored on the state branch
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record is not None
    fields = ("seq", "stage", "status", "answer", "commits", "usage", "exit_code", "duration_s", "agent", "model")
    assert set(fields) | {"session_id"} <= set(record)
    assert (record["seq"], record["stage"], record["status"], record["commits"]) == (1, "build", "done", 1)
    assert record["exit_code"] == 0 and record["duration_s"] > 0 and "VERDICT: PASS" in record["answer"]
    author, committer, subject = git(origin, "log", "-1", "--format=%an|%cn|%s", BRANCH).split("|")
    assert (author, committer) == ("Interlock", "Interlock") and subject.startswith("interlock(issue-7): build")
    assert git(origin, "show", f"{BRANCH}:hello.txt") == "hello"


DUMP_AGENT = r"""
import json, os, pathlib, sys
sys.stdin.read()
out = pathlib.Path(sys.argv[1])
seen = {"env": dict(os.environ), "files": {}}
def take(root):
    root = pathlib.Path(root).resolve()
    found = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in found:
        if "objects" not in path.parts and path != out:
            seen["files"][str(path)] = path.read_bytes().decode("utf-8", "replace")
for root in (os.environ["HOME"], ".git", pathlib.Path(os.environ["INTERLOCK_PROMPT_FILE"]).parent, *sys.argv[2:]):
    take(root)
seen["ancestors"], pid = {}, os.getppid()  # what the processes above it started with: same user, no privilege
while pid > 1:
    for part in ("environ", "cmdline"):
        data = pathlib.Path(f"/proc/{pid}/{part}").read_bytes()
        seen["ancestors"][f"/proc/{pid}/{part}"] = data.decode("utf-8", "replace")
    pid = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
out.write_text(json.dumps(seen))
print("Looked around.\nVERDICT: PASS")
"""
JOB_TOKEN = "ghs_jobjobjobjobjobjobjobjob0000"  # the job's own token: Interlock's git reads with it
SECRETS = {  # what a runner's process may hold; none of it is the agent's
    "INTERLOCK_TOKEN": PUSH_TOKEN,
    "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN,
    "GITHUB_TOKEN": JOB_TOKEN,
    "ACTIONS_RUNTIME_TOKEN": "runtime-secret-value",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-secret-value",
    "MY_DEPLOY_KEY": "deploy-secret-value",  # a credential no list of bad names knows: only an allow-list stops it
}


def dump_agent(tmp_path: Path, *roots: Path) -> tuple[str, Path]:
    """An agent that writes down everything it can see: its environment, every file of HOME, of the checkout's
    .git (objects aside), of its scratch folder (prompt, usage) and of ``roots``."""
    script, out = tmp_path / "dump.py", tmp_path / "seen-by-agent.json"
    script.write_text(DUMP_AGENT)
    return f"command:{shlex.join([sys.executable, str(script), str(out), *map(str, roots)])}", out


def runner_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = runner\n")
    return home


@pytest.mark.parametrize("phase_name", ["work", "all"])
def test_the_agent_sees_the_read_token_and_no_other_credential(origin: Path, tmp_path: Path, phase_name: str) -> None:
    # SPEC GH9: an agent's process holds no credential but the read-only one it is given, wherever it looks
    checkout, tmpdir = tmp_path / "checkout", tmp_path / "tmp"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    tmpdir.mkdir()
    handoff = tmp_path / "handoff"
    agent, out = dump_agent(tmp_path, tmpdir, handoff)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(runner_home(tmp_path)), "TMPDIR": str(tmpdir), **SECRETS}
    env |= {"GITHUB_ENV": str(tmp_path / "github_env"), "INTERLOCK_READ_TOKEN": READ_TOKEN, "LANG": "C.UTF-8"}
    extra = ["--agent", agent, "--workdir", str(checkout)]
    if phase_name == "all":
        extra += ["--remote", str(origin)]
    result = phase(origin, tmp_path, phase_name, env, *extra)
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    assert seen["env"]["GITHUB_TOKEN"] == seen["env"]["GH_TOKEN"] == READ_TOKEN
    mission = {"RUN_ID", "STAGE", "CAPABILITY", "VISIT", "MISSION", "KIND", "WORKDIR", "PROMPT_FILE", "USAGE_FILE"}
    expected = {"PATH", "HOME", "TMPDIR", "LANG", "GITHUB_TOKEN", "GH_TOKEN", *(f"INTERLOCK_{m}" for m in mission)}
    shells_own = {"PWD", "OLDPWD", "SHLVL", "_"}  # set by the /bin/sh that runs a command agent
    assert {name for name in seen["env"] if not name.startswith("LC_")} - shells_own == expected
    files = seen["files"]
    assert str(checkout / ".git" / "config") in files and str(tmp_path / "home" / ".gitconfig") in files
    assert any(name.endswith("prompt.md") for name in files)  # the scratch folder was walked
    handed = {p: p.read_bytes() for p in handoff.rglob("*") if p.is_file()} if handoff.exists() else {}
    assert phase_name == "all" or set(handed) >= {handoff / "outcome.json"}
    ancestors = seen.pop("ancestors")
    assert any(path.endswith("/environ") for path in ancestors)  # Interlock's process was read
    for name, value in SECRETS.items():
        assert value not in json.dumps(seen), f"the agent could see {name}"
        if phase_name == "work":  # with both phases in one process, the agent's parent holds the write token
            assert value not in json.dumps(ancestors), f"the agent could read {name} in /proc/PID/environ"
        assert all(value.encode() not in data for data in handed.values()), f"{name} is in the hand-off"


def test_the_agent_gets_its_own_api_key_and_the_names_a_person_lists() -> None:
    # SPEC GH9: a preset's key variables pass by name; a listed name passes; a credential can never be listed
    source = {"ANTHROPIC_API_KEY": API_KEY, "OPENAI_API_KEY": "sk-openai", "DATABASE_URL": "db", **SECRETS}
    names = (*agent_keys("claude"), *parse_names("DATABASE_URL,\n  EXTRA"))
    env = allowed_environment(source, names, READ_TOKEN)
    assert env == {
        "ANTHROPIC_API_KEY": API_KEY,
        "DATABASE_URL": "db",
        "GITHUB_TOKEN": READ_TOKEN,
        "GH_TOKEN": READ_TOKEN,
    }
    assert agent_keys("openai:gpt-4o") == agent_keys("codex") == ("OPENAI_API_KEY", "OPENAI_BASE_URL")
    assert agent_keys("./my-agent.sh") == () and allowed_environment(source, ()) == {}
    for refused in ("INTERLOCK_TOKEN", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "GITHUB_ENV"):
        with pytest.raises(AgentEnvError, match=f"{refused} is a credential Interlock never passes"):
            parse_names(f"SEEN,{refused}")
    with pytest.raises(AgentEnvError, match="'A-B' is not the name"):
        parse_names("A-B")


def test_a_bad_agent_env_name_stops_the_job_with_a_clear_error(origin: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "INTERLOCK_AGENT_ENV": "INTERLOCK_TOKEN"}
    result = phase(origin, tmp_path, "work", env, "--agent", "demo", "--workdir", str(tmp_path))
    assert result.returncode != 0 and "INTERLOCK_TOKEN is a credential Interlock never passes" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "handoff").exists()


def test_secrets_are_redacted_from_the_record_and_the_log(origin: Path, tmp_path: Path) -> None:
    result, _ = job(origin, tmp_path, mode="leak")
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert API_KEY not in json.dumps(record) and "ghp_abcdefghijklmnopqrstuvwxyz0123" not in json.dumps(record)
    assert record["answer"].count(MASK) == 2
    assert API_KEY not in result.stdout + result.stderr


def test_a_crashing_agent_is_recorded_as_failed(origin: Path, tmp_path: Path) -> None:
    # SPEC E1: the record says the mission did not end done; the service routes on it
    result, _ = job(origin, tmp_path, mode="crash")
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "failed" and record["exit_code"] == 3 and record["commits"] == 0


def test_a_job_for_a_mission_the_run_no_longer_awaits_stores_nothing(origin: Path, tmp_path: Path) -> None:
    result, _ = job(origin, tmp_path, mission=5)
    assert result.returncode == 0 and "no longer waits for mission 5" in result.stdout
    assert state_file(origin, "runs/issue-7/missions/0005-build.json") is None


def test_a_repository_without_a_state_branch_is_a_clear_error(origin: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "--git-dir", str(origin), "branch", "-D", STATE_BRANCH], check=True, capture_output=True)
    result, _ = job(origin, tmp_path)
    assert result.returncode != 0 and "no `interlock/state` branch" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_record_push_is_a_compare_and_swap(origin: Path, tmp_path: Path) -> None:
    # SPEC J2: a writer that moved the state branch meanwhile makes the push fail; the commit is rebuilt
    first, second = tmp_path / "one", tmp_path / "two"
    for folder in (first, second):
        subprocess.run(["git", "clone", "--quiet", str(origin), str(folder)], check=True)
    one, two = Remote(first), Remote(second)
    stale = one.fetch(STATE_BRANCH)
    two.add_files(STATE_BRANCH, {"runs/other.json": b"{}\n"}, "another writer")
    commit = one._commit_on(stale, {"runs/mine.json": b"{}\n"}, "built on a stale head")
    assert one.push(commit, STATE_BRANCH) is False
    one.add_files(STATE_BRANCH, {"runs/mine.json": b"{}\n"}, "rebuilt on the new head")
    names = git(origin, "ls-tree", "--name-only", f"{STATE_BRANCH}:runs")
    assert {"other.json", "mine.json", "issue-7.json"} <= set(names.splitlines())


def test_the_redactor_masks_secret_values_and_known_shapes() -> None:
    redactor = Redactor({"MY_API_KEY": "abcd1234efgh", "HOME": "/home/someone", "SHORT_TOKEN": "1"})
    text = "key abcd1234efgh, home /home/someone, github_pat_ABCDEFGHIJKLMNOPQRSTUV_123 and 1"
    assert redactor.text(text) == f"key {MASK}, home /home/someone, {MASK} and 1"
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    assert redactor.data({"a": [key, 3]}) == {"a": [MASK, 3]}


def test_a_stop_requested_before_the_job_began_is_recorded_as_skipped(tmp_path: Path) -> None:
    # SPEC J4: checked before the mission starts; the agent never runs
    origin = seed_origin(tmp_path, stop=True)
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json")["status"] == "skipped"
    assert not (tmp_path / "seen.json").exists()


def test_a_check_node_runs_its_command_in_the_job(tmp_path: Path) -> None:
    # SPEC V7: the command's exit code is the verdict; no agent
    origin = seed_origin(tmp_path, nodes=[node("build", check="test -f README.md"), node("review", "review")])
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert (record["kind"], record["exit_code"], record["agent"]) == ("check", 0, "check")
    assert "$ test -f README.md" in record["answer"] and not (tmp_path / "seen.json").exists()


def test_a_check_in_the_job_commits_nothing_not_even_its_caches(tmp_path: Path) -> None:
    # SPEC V7: a verdict computed by code; pytest's caches and report stay out of the run branch
    check = f"{sys.executable} -m pytest -q --junitxml=junit.xml"
    test = "def test_sum():\n    assert sum([1, 2]) == 3\n"
    origin = seed_origin(
        tmp_path, nodes=[node("build", check=check), node("review", "review")], files={"test_a.py": test}
    )
    head = git(origin, "rev-parse", BRANCH)
    result, checkout = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert (record["kind"], record["exit_code"], record["commits"]) == ("check", 0, 0)
    assert (checkout / ".pytest_cache").is_dir() and (checkout / "junit.xml").exists()  # pytest ran in the job
    assert git(origin, "rev-parse", BRANCH) == head


def test_an_agent_mission_commits_no_cache_the_repository_does_not_track(tmp_path: Path) -> None:
    # GH2: the agent's work is committed without __pycache__/, .venv/, node_modules/...; tracked files as usual
    origin = seed_origin(tmp_path, files={"tracked.pyc": "tracked on purpose"})
    result, _ = job(origin, tmp_path, mode="caches")
    assert result.returncode == 0, result.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json")["commits"] == 1
    assert set(git(origin, "ls-tree", "-r", "--name-only", BRANCH).splitlines()) == {
        "README.md",
        "tracked.pyc",
        "hello.txt",
    }
    assert git(origin, "show", f"{BRANCH}:tracked.pyc") == "made by the agent"


def test_caches_are_left_out_at_any_depth_and_the_repository_rules_still_count(tmp_path: Path) -> None:
    # SPEC GH2: `.yarn/cache/` of a package in a monorepo is as much a cache as the root's; tracked files and
    # the repository's own negations are committed as git's rules say
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    files = {"pkg/__pycache__/old.pyc": "tracked", "README.md": "# r\n", ".gitignore": "!keep.pyc\n"}
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    remote = Remote(repo)
    remote.git("add", "--force", ".")
    remote.git("commit", "--quiet", "-m", "initial")
    made = ("pkg/__pycache__/old.pyc", "pkg/__pycache__/new.pyc", "keep.pyc", "web/app/node_modules/x/i.js")
    made += ("packages/p/.yarn/cache/z.zip", ".yarn/cache/y.zip", "src/.venv/pyvenv.cfg", "lib/m.egg-info/PKG")
    for name in made:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("made by the agent")
    remote.commit_all("the agent's work")
    committed = set(remote.git("show", "--name-only", "--format=", "HEAD").decode().split())
    assert committed == {"pkg/__pycache__/old.pyc", "keep.pyc"}


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("rewrite", "do not fast-forward the run branch"),  # SPEC GH2: fast-forwards only
        ("workflow", "changed workflow files"),  # a workflow runs with the repository's secrets
    ],
)
def test_commits_that_must_not_land_are_never_pushed(origin: Path, tmp_path: Path, mode: str, why: str) -> None:
    # the mission fails, nothing is pushed, and a person decides
    head = git(origin, "rev-parse", BRANCH)
    result, _ = job(origin, tmp_path, mode=mode)
    assert result.returncode == 0, result.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "failed" and why in record["answer"]
    assert git(origin, "rev-parse", BRANCH) == head


def test_hooks_the_agent_leaves_never_run(origin: Path, tmp_path: Path) -> None:
    # the commit and the push run git with hooks off: a hook would run with Interlock's token
    result, _ = job(origin, tmp_path, mode="hook")
    assert result.returncode == 0, result.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json")["commits"] == 1
    assert not (tmp_path / "seen.json.hook").exists()


def test_a_git_filter_the_agent_configures_runs_without_any_token(origin: Path, tmp_path: Path) -> None:
    # SPEC GH9: what the agent leaves in .git/config may run when Interlock commits; it finds no token there
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "seen.json"), "MODE": "filter"}
    env |= {"INTERLOCK_AGENT_ENV": "SEEN,MODE", "GITHUB_TOKEN": JOB_TOKEN, "INTERLOCK_READ_TOKEN": READ_TOKEN}
    extra = ("--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout))
    result = phase(origin, tmp_path, "work", env, *extra)
    assert result.returncode == 0, result.stderr
    filtered = (tmp_path / "seen.json.filter").read_text()  # the filter did run, as Interlock's git added files
    assert JOB_TOKEN not in filtered and "AUTHORIZATION" not in filtered


def test_the_answer_is_folded_into_the_job_log_with_workflow_commands_off(origin: Path, tmp_path: Path) -> None:
    result, _ = job(origin, tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0] == "::group::Answer of mission 1" and lines[1].startswith("::stop-commands::")
    marker = lines[1].removeprefix("::stop-commands::")
    assert len(marker) == 32 and lines[2:4] == ["Added hello.txt", "VERDICT: PASS"]
    assert lines[4:6] == [f"::{marker}::", "::endgroup::"] and "1 commit(s) pushed" in lines[6]


def phase(
    origin: Path, tmp_path: Path, name: str, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "1"]
    argv += ["--phase", name, "--handoff", str(tmp_path / "handoff"), *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_work_and_deliver_run_as_two_jobs(origin: Path, tmp_path: Path) -> None:
    # SPEC GH2: the agent's job holds only a read token; the pushing job never works in the agent's checkout
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "--quiet", "-b", BRANCH, str(origin), str(checkout)], check=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "seen.json"), "MODE": "work"}
    base["INTERLOCK_AGENT_ENV"] = "SEEN,MODE"
    work_env = {**base, "GITHUB_TOKEN": READ_TOKEN}  # the work job's token is read-only
    work = phase(
        origin, tmp_path, "work", work_env, "--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout)
    )
    assert work.returncode == 0, work.stderr
    assert state_file(origin, "runs/issue-7/missions/0001-build.json") is None  # nothing written yet
    assert git(origin, "log", "-1", "--format=%s", BRANCH) == "interlock: start"
    handed = json.loads((tmp_path / "handoff" / "outcome.json").read_text())
    assert handed["status"] == "done" and (tmp_path / "handoff" / "work.bundle").exists()
    deliver_env = {**base, "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
    deliver = phase(origin, tmp_path, "deliver", deliver_env, "--remote", str(origin), "--work-result", "success")
    assert deliver.returncode == 0, deliver.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert (record["status"], record["commits"]) == ("done", 1)
    assert git(origin, "show", f"{BRANCH}:hello.txt") == "hello"


def test_a_work_job_that_handed_nothing_over_is_a_crashed_mission(origin: Path, tmp_path: Path) -> None:
    # SPEC E1: the deliver job still stores a record, saying how the work job ended
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
    deliver = phase(origin, tmp_path, "deliver", env, "--remote", str(origin), "--work-result", "cancelled")
    assert deliver.returncode == 0, deliver.stderr
    record = state_file(origin, "runs/issue-7/missions/0001-build.json")
    assert record["status"] == "crashed" and "ended cancelled without handing over" in record["answer"]


def test_deliver_needs_a_remote_url_and_a_handoff(origin: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = phase(origin, tmp_path, "deliver", env)
    assert result.returncode == 2 and "--phase deliver needs --remote URL" in result.stderr
    argv = [sys.executable, "-c", "from app.cli import main; main()", "step", "--run", RUN, "--mission", "1"]
    result = subprocess.run([*argv, "--phase", "dance"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2 and "--phase must be one of all, work, deliver" in result.stderr
