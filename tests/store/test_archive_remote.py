"""Archiving on GitHub (issue 27): the scheduled workflow's job runs ``interlock archive --remote URL`` in a
checkout of the default branch, whose ``.github/interlock.yml`` says ``archive_after_days``; the state branch
is fetched into a scratch clone, archived there and pushed back as a fast-forward. Here the remote is a real
bare repository, as the action's script builds its URL, and the job is the action's own script.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

import app.runner.archive_remote as archive_remote_module
from app.github.config import RepoConfig
from app.runner.archive_remote import archive_remote
from app.runner.remote import Remote
from app.store.archive import DEFAULT_DAYS, archive_path
from tests.helpers import ROOT, doc
from tests.runner.test_action import ACTION, run_action_script
from tests.runner.test_job import PUSH_TOKEN
from tests.store.test_archive import ended_run

WORKFLOW = ROOT / ".github" / "workflows" / "interlock-archive.yml"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def origin_with_an_old_ended_run(tmp_path: Path, monkeypatch: Any) -> tuple[Path, str]:
    """``tmp_path/origin.git`` (where the action's script finds the repository) holding a state branch with a
    run cancelled 40 days ago."""
    bench, run_id = ended_run(tmp_path / "local", monkeypatch)
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "--quiet", "--mirror", str(bench.folder), str(origin))
    return origin, run_id


def run_folder(origin: Path, run_id: str) -> list[str]:
    return git(origin, "ls-tree", "-r", "--name-only", "interlock/state", f"runs/{run_id}/").split()


def checkout_with(tmp_path: Path, config: str | None) -> Path:
    """The job's sparse checkout of the default branch: ``.github/interlock.yml`` holding ``config``."""
    checkout = tmp_path / "workspace"
    (checkout / ".github").mkdir(parents=True, exist_ok=True)
    path = checkout / ".github" / "interlock.yml"
    path.unlink(missing_ok=True)
    if config is not None:
        path.write_text(config)
    return checkout


def test_the_scheduled_job_archives_what_the_repository_configuration_says(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC GH4 (issue 27): archive_after_days decides; 0 never; the default 30; verify reads the pushed archive
    origin, run_id = origin_with_an_old_ended_run(tmp_path, monkeypatch)
    files = run_folder(origin, run_id)
    job = {"command": "archive", "token": PUSH_TOKEN}
    for config in ("archive_after_days: 50\n", "archive_after_days: 0\n"):
        kept = run_action_script(tmp_path, checkout_with(tmp_path, config), job)
        assert kept.returncode == 0 and kept.stdout.startswith("no ended run older than"), kept.stderr
        assert run_folder(origin, run_id) == files
    done = run_action_script(tmp_path, checkout_with(tmp_path, "extends: octo/base\n"), job)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [  # a base's value is not read: said, and the default used
        ".github/interlock.yml extends octo/base, which this command does not read: archive_after_days is 30 unless"
        " this file sets it",
        f"run {run_id}: archived",
    ]
    assert run_folder(origin, run_id) == [] and git(origin, "ls-tree", "--name-only", "interlock/state", "archive/")
    assert archive_path(run_id) in git(origin, "ls-tree", "-r", "--name-only", "interlock/state")
    verified = subprocess.run(["interlock", "verify", run_id, "--repo", str(origin)], capture_output=True, text=True)
    assert verified.returncode == 0 and "verified" in verified.stdout, verified.stderr


def test_a_configuration_that_is_wrong_is_refused_naming_the_key(tmp_path: Path, monkeypatch: Any) -> None:
    # issue 27: no archive on a guess
    origin, run_id = origin_with_an_old_ended_run(tmp_path, monkeypatch)
    for config in ("archive_after_days: -1\n", "archive_after_days: soon\n"):
        refused = run_action_script(tmp_path, checkout_with(tmp_path, config), {"command": "archive"})
        assert refused.returncode == 2 and "archive_after_days" in refused.stderr, refused.stderr
    assert run_folder(origin, run_id) != []


def test_a_writer_that_moves_the_branch_meanwhile_loses_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J2: the push is a fast-forward of the head fetched; a save in between makes the pass start again
    origin, run_id = origin_with_an_old_ended_run(tmp_path, monkeypatch)
    writer = tmp_path / "writer"
    git(tmp_path, "clone", "--quiet", "-b", "interlock/state", str(origin), str(writer))
    real, passes = archive_remote_module.archive_run, []

    def archive_while_a_writer_saves(path: Path, name: str) -> bool:
        passes.append(name)
        if len(passes) == 1:  # the service saves another run's transition between the fetch and the push
            (writer / "board.md").write_text("a save that came first\n")
            git(writer, "add", "board.md")
            git(writer, "-c", "user.name=s", "-c", "user.email=s@s", "commit", "--quiet", "-m", "a save")
            git(writer, "push", "--quiet", "origin", "HEAD:interlock/state")
        return real(path, name)

    monkeypatch.setattr(archive_remote_module, "archive_run", archive_while_a_writer_saves)
    done = archive_remote(f"file://{origin}", None, tmp_path / "scratch", 30, datetime.now(UTC))
    assert done == [(run_id, True)] and passes == [run_id, run_id]
    saved = git(writer, "rev-parse", "HEAD").strip()
    assert git(origin, "merge-base", "--is-ancestor", saved, "interlock/state") == ""  # the save is kept
    assert git(origin, "show", "interlock/state:board.md") == "a save that came first\n"
    assert run_folder(origin, run_id) == []


def test_the_archive_workflow_runs_daily_with_a_write_token_only_for_contents() -> None:
    # issue 27: what a repository copies to archive on GitHub; the action's `archive` command exists
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow[True]["schedule"][0]["cron"] and "workflow_dispatch" in workflow[True]  # `on:` reads as True
    assert workflow["permissions"] == {} and workflow["concurrency"]["group"] == "interlock-archive"
    job = workflow["jobs"]["archive"]
    assert job["permissions"] == {"contents": "write"}
    checkout, action = job["steps"]
    assert checkout["with"]["persist-credentials"] is False and checkout["with"]["sparse-checkout"] == ".github"
    assert action["with"] == {"command": "archive"}
    assert 'archive --remote "$remote"' in ACTION.read_text()
    assert RepoConfig().archive_after_days == DEFAULT_DAYS


def test_the_readme_names_the_key_and_the_workflow() -> None:
    # issue 27: the README's words are the behaviour tested above
    readme = " ".join(doc("local/journal.md", "github/configuration.md").split())
    section = readme.split("**Archiving ended runs.**", 1)[1].split("### ", 1)[0]
    assert "`.github/workflows/interlock-archive.yml`" in section and "`archive_after_days`" in section
    assert "a fast-forward push of its own" in section and "no API request" in section
    assert "goes on from that run on the new head" in section and "wins the race at the remote's ref update" in section
    assert "packed with its archive, never over it" in section and "user and password are never printed" in section
    assert f"archive_after_days: {DEFAULT_DAYS}" in readme  # in the configuration's example


def test_a_push_that_loses_the_race_at_the_ref_update_is_a_moved_branch(tmp_path: Path) -> None:
    # SPEC J2: another writer can move the branch after the remote checked the push and before it updates the
    # ref ("cannot lock ref …: is at X but expected Y", GitHub's answer too): the pass fetches again, it is no
    # refusal that stops it. The origin's pre-receive hook makes that race happen once, every time.
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "--quiet", "-b", "interlock/state", str(seed))
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "--allow-empty", "-m"]
    git(seed, *commit, "base")
    git(seed, "push", "--quiet", str(origin), "HEAD:refs/heads/interlock/state")
    git(seed, *commit, "the other writer's save")
    git(seed, "push", "--quiet", str(origin), "HEAD:refs/heads/other")
    hook = origin / "hooks" / "pre-receive"
    other = git(seed, "rev-parse", "HEAD").strip()
    hook.write_text(
        f"#!/bin/sh\n[ -e {tmp_path}/raced ] && exit 0\ntouch {tmp_path}/raced\n"
        f"env -u GIT_QUARANTINE_PATH git update-ref refs/heads/interlock/state {other}\n"
    )
    hook.chmod(0o755)
    git(seed, "reset", "--quiet", "--hard", "HEAD~1")
    git(seed, *commit, "an archive")
    remote = Remote(seed, remote=f"file://{origin}")
    assert remote.push(git(seed, "rev-parse", "HEAD").strip(), "interlock/state") is False
    assert git(origin, "rev-parse", "interlock/state").strip() == other  # the writer's save stands


def test_a_url_with_a_password_is_named_without_it(tmp_path: Path) -> None:
    # the standards: nothing printed carries a secret; a remote's URL may hold one
    from tests.git_http import serve_git

    root = tmp_path / "srv"
    root.mkdir()
    git(root, "init", "--quiet", "--bare", str(root / "empty.git"))
    secret = "hunter2hunter2pass"  # no known token shape: only the URL's syntax says it is a password
    with serve_git(root) as (url, _):
        remote = url.replace("http://", f"http://someone:{secret}@") + "/empty.git"
        command = ["interlock", "archive", "--remote", remote, "--repo", str(checkout_with(tmp_path, None))]
        refused = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "has no interlock/state branch" in refused.stderr
    assert secret not in refused.stdout + refused.stderr and url in refused.stderr
