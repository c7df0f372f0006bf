"""Partial clones (issue 27, part 3): mission jobs check out blobless and the deliver job fetches blobless, over
real HTTP from ``git http-backend`` (tests/git_http.py), public and private.

A blobless checkout fetches an old file's contents when something reads it, with the credentials of the git
process that reads it. The agent's git has none, so for a private repository Interlock completes the
checkout with the job's read token before the agent starts; for a public one it leaves it blobless.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.gitaccess import ON_GITHUB, isolated_env, run_git
from app.runner.partial import BLOBLESS, clone_filter, is_partial, missing_blobs, ready_for_agent
from app.runner.remote import Remote, RemoteError
from tests.git_http import filtered, serve_git
from tests.runner.test_job import BRANCH, PUSH_TOKEN, READ_TOKEN, RUN, git, phase, seed_origin, state_file

OLD_VERSIONS = 5

READER = r"""
import json, os, pathlib, subprocess, sys
sys.stdin.read()
log = subprocess.run(["git", "log", "-p", "--all", "--", "notes.txt"], capture_output=True, text=True)
pathlib.Path(os.environ["SEEN"]).write_text(json.dumps({"rc": log.returncode, "out": log.stdout, "err": log.stderr}))
pathlib.Path("hello.txt").write_text("hello\n")
print("VERDICT: PASS")
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """The origin under a folder the HTTP server exports, with an ``old`` branch whose file versions a
    blobless checkout of the run branch does not have; filters allowed, as GitHub allows them."""
    root = tmp_path / "srv"
    root.mkdir()
    origin = seed_origin(root)
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant", "http.receivepack"):
        git(origin, "config", key, "true")
    seed = root / "seed"
    for version in range(OLD_VERSIONS):
        (seed / "notes.txt").write_text(f"old version {version}\n" * 50)
        git(seed, "add", "notes.txt")
        git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", f"notes {version}")
    git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/old")
    return origin


def header(token: str) -> str:
    return "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def blobless_checkout(url: str, folder: Path, token: str | None = None) -> Path:
    """As ``actions/checkout`` with ``filter: blob:none`` and ``fetch-depth: 0`` clones: every branch, and no
    credential left in the clone."""
    auth = ["-c", f"http.extraheader={header(token)}"] if token else []
    subprocess.run(
        ["git", *auth, "clone", "--quiet", f"--filter={BLOBLESS}", "-b", BRANCH, url, str(folder)], check=True
    )
    return folder


def agent_log(checkout: Path) -> subprocess.CompletedProcess[bytes]:
    """What an agent's ``git log -p`` does in the checkout: a git with no credential at all."""
    return run_git(["log", "-p", "--all", "--", "notes.txt"], checkout, isolated_env(ON_GITHUB), timeout_s=60)


def test_a_public_repository_stays_blobless_and_the_agent_reads_old_files_lazily(served: Path, tmp_path: Path) -> None:
    # SPEC GH2: the agent holds no credential; a public remote serves its lazy fetches without one
    with serve_git(served.parent) as (url, _):
        checkout = blobless_checkout(f"{url}/origin.git", tmp_path / "checkout")
        remote = Remote(checkout, token=READ_TOKEN)
        missing = len(missing_blobs(remote))
        assert is_partial(remote) and missing >= OLD_VERSIONS
        assert ready_for_agent(remote, f"{url}/origin.git") == 0
        assert len(missing_blobs(remote)) == missing  # nothing fetched ahead of need
        read = agent_log(checkout)
    assert read.returncode == 0 and b"old version 0" in read.stdout


def test_a_private_repository_is_completed_with_the_token_before_the_agent_starts(served: Path, tmp_path: Path) -> None:
    # SPEC GH2: without this the agent's git log -p stops halfway ("could not read Username")
    with serve_git(served.parent, token=READ_TOKEN) as (url, server):
        checkout = blobless_checkout(f"{url}/origin.git", tmp_path / "checkout", READ_TOKEN)
        assert agent_log(checkout).returncode != 0 and server.refused > 0  # what the agent would meet
        remote = Remote(checkout, token=READ_TOKEN)
        fetched = ready_for_agent(remote, f"{url}/origin.git")
        assert fetched >= OLD_VERSIONS and missing_blobs(remote) == []
    read = agent_log(checkout)  # the server is gone: everything is local now
    assert read.returncode == 0 and read.stdout.count(b"old version") >= OLD_VERSIONS
    config = (checkout / ".git" / "config").read_text()
    assert READ_TOKEN not in config and "extraheader" not in config  # the completion left no credential


def test_a_mission_on_a_private_repository_runs_its_agent_in_a_complete_checkout_and_delivers_blobless(
    served: Path, tmp_path: Path
) -> None:
    # SPEC GH2, GH3: two jobs over HTTP; the work job completes the checkout, the deliver job fetches blobless
    agent = tmp_path / "reader.py"
    agent.write_text(READER)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEEN": str(tmp_path / "seen.json"), "MODE": "work"}
    base["INTERLOCK_AGENT_ENV"] = "SEEN"
    with serve_git(served.parent, token=READ_TOKEN) as (url, server):
        server.tokens.add(PUSH_TOKEN)
        checkout = blobless_checkout(f"{url}/origin.git", tmp_path / "checkout", READ_TOKEN)
        work_env = {**base, "GITHUB_TOKEN": READ_TOKEN}
        argv = ("--agent", f"command:{sys.executable} {agent}", "--workdir", str(checkout))
        work = phase(served, tmp_path, "work", work_env, *argv)
        assert work.returncode == 0, work.stderr
        seen = json.loads((tmp_path / "seen.json").read_text())
        assert seen["rc"] == 0 and seen["out"].count("old version") >= OLD_VERSIONS, seen["err"]
        asked = len(server.requests)
        deliver_env = {**base, "INTERLOCK_PUSH_TOKEN": PUSH_TOKEN}
        deliver = phase(
            served, tmp_path, "deliver", deliver_env, "--remote", f"{url}/origin.git", "--work-result", "success"
        )
        assert deliver.returncode == 0, deliver.stderr
        fetches = server.requests[asked:]
    assert fetches and all(filtered(body) for body in fetches if b"command=fetch" in body)
    assert sum(b"command=fetch" in body for body in fetches) >= 2  # the branches, then a blob read on demand
    record = state_file(served, f"runs/{RUN}/missions/0001-build.json")
    assert (record["status"], record["commits"]) == ("done", 1)
    assert git(served, "show", f"{BRANCH}:hello.txt") == "hello"


def test_a_satellite_is_fetched_blobless_only_where_its_agent_could_complete_it(served: Path, tmp_path: Path) -> None:
    # SPEC U7: a satellite is checked out beside the main one, by the same rule
    with serve_git(served.parent) as (url, _):
        assert clone_filter(f"{url}/origin.git", tmp_path) == BLOBLESS
    with serve_git(served.parent, token=READ_TOKEN) as (url, server):
        assert clone_filter(f"{url}/origin.git", tmp_path) == "" and server.refused == 1


def test_a_bundle_whose_commit_lacks_its_tree_is_refused_before_any_ref_is_written(tmp_path: Path) -> None:
    # SPEC GH2: the deliver job reads the agent's commits with `bundle unbundle`, not `fetch`, so it checks
    # connectivity itself: a bundle crafted with a commit and not its tree must not become a ref to push
    origin = seed_origin(tmp_path)
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", "-b", BRANCH, str(origin), str(work))
    base = git(work, "rev-parse", "HEAD")
    (work / "new.txt").write_text("new\n")
    git(work, "add", "new.txt")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "new")
    commit = git(work, "rev-parse", "HEAD")
    pack = subprocess.run(
        ["git", "pack-objects", "--stdout"], cwd=work, input=f"{commit}\n".encode(), capture_output=True
    )
    bundle = tmp_path / "work.bundle"
    ref = "refs/interlock/mission"
    bundle.write_bytes(f"# v2 git bundle\n-{base}\n{commit} {ref}\n\n".encode() + pack.stdout)
    deliver = tmp_path / "deliver.git"
    git(tmp_path, "clone", "--quiet", "--bare", f"file://{origin}", str(deliver))
    remote = Remote(deliver)
    with pytest.raises(RemoteError, match="rev-list failed"):
        remote.read_bundle(bundle, ref)
    assert run_git(["rev-parse", "--verify", "--quiet", ref], deliver, remote.env).returncode != 0
    git(work, "update-ref", ref, commit)
    git(work, "bundle", "create", "--quiet", str(bundle), ref, f"^{base}")
    assert remote.read_bundle(bundle, ref) == commit == git(deliver, "rev-parse", ref)
