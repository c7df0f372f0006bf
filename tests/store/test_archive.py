"""Issue 27: the state branch stays small. An ended run's folder is replaced by one archive file in one commit
(``interlock archive``), and ``status``, ``board`` and ``verify`` read the archived run as before. Real
repositories in temporary folders, runs made by the real local shell, the real console script."""

from __future__ import annotations

import gzip
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.engine import events as ev
from app.engine.record import Status
from app.store.archive import ArchiveUnreadable, archive_path, pack, unpack
from app.store.journal import mission_path
from app.store.layout import logical
from tests.local.harness import Bench
from tests.local.test_runs import LOOP
from tests.local.test_verify import SCRIPT, commit_on_state

OLD = datetime.now(UTC) - timedelta(days=40)  # the moment the old runs here were abandoned


def readings(run_id: str) -> list[list[str]]:
    """What a person reads of a run: each prints the same before and after archiving."""
    return [
        ["verify", run_id],
        ["status", run_id],
        ["journey", run_id],
        ["status", run_id, "--json"],
        ["journey", run_id, "--routing"],  # SPEC C3: every routing line, read from the archived events files
    ]


def interlock(bench: Bench, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["interlock", *args, "--repo", str(bench.folder)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def git(bench: Bench, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=bench.folder, capture_output=True, text=True, check=True).stdout


def branch_files(bench: Bench, run_id: str) -> list[str]:
    return git(bench, "ls-tree", "-r", "--name-only", "interlock/state", f"runs/{run_id}/").splitlines()


def ended_run(tmp_path: Path, monkeypatch: Any, at: datetime = OLD) -> tuple[Bench, str]:
    """A run that finished its missions, then abandoned by a person at ``at``: cancelled, ended."""
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(LOOP, "Do the work", "details")
    run = bench.shell().send(run.id, lambda _run: ev.Abandon(key="abandon", at=at, by="alice"), drive=False)
    assert run.status is Status.CANCELLED
    return bench, run.id


def test_an_old_ended_run_is_archived_and_status_and_verify_read_it(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6 (issue 27): the folder's files become one archive, byte for byte; verify and status answer as before
    bench, run_id = ended_run(tmp_path, monkeypatch)
    before_files = {path: git(bench, "show", f"interlock/state:{path}") for path in branch_files(bench, run_id)}
    before = [interlock(bench, *command).stdout for command in readings(run_id)]
    assert "verified" in before[0] and len(before_files) > 5 and "VERDICT: " in before[4]
    archived = interlock(bench, "archive")
    assert archived.returncode == 0, archived.stderr
    assert archived.stdout == f"run {run_id}: archived\n"
    assert branch_files(bench, run_id) == []
    assert git(bench, "ls-tree", "--name-only", "interlock/state", "archive/").split() == [archive_path(run_id)]
    packed = subprocess.run(
        ["git", "show", f"interlock/state:{archive_path(run_id)}"], cwd=bench.folder, capture_output=True, check=True
    ).stdout
    assert {path: data.decode() for path, data in unpack(packed, "x").items()} == {
        logical(path): text for path, text in before_files.items()
    }
    after = [interlock(bench, *command) for command in readings(run_id)]
    assert [result.stdout for result in after] == before and all(result.returncode == 0 for result in after)
    board = json.loads(interlock(bench, "board", "--json").stdout)
    assert [(row["id"], row["status"], row["missions"]) for row in board] == [(run_id, "cancelled", 4)]


def test_archiving_twice_changes_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    # issue 27: idempotent; the second pass finds no folder and makes no commit
    bench, run_id = ended_run(tmp_path, monkeypatch)
    assert interlock(bench, "archive").returncode == 0
    head = git(bench, "rev-parse", "interlock/state")
    again = interlock(bench, "archive", run_id)
    assert again.returncode == 0 and again.stdout == f"run {run_id}: already archived\n"
    assert interlock(bench, "archive").stdout == "no ended run older than 30 days: nothing to archive\n"
    assert git(bench, "rev-parse", "interlock/state") == head


def test_a_live_run_is_never_archived(tmp_path: Path, monkeypatch: Any) -> None:
    # issue 27: a run that may move again (here awaiting merge) keeps its folder, even when named
    bench = Bench(tmp_path, SCRIPT, monkeypatch)
    run = bench.shell().start(LOOP, "Do the work", "details")
    files = branch_files(bench, run.id)
    assert interlock(bench, "archive", "--older-than", "1").stdout.startswith("no ended run")
    named = interlock(bench, "archive", run.id)
    assert named.returncode == 2 and f"run {run.id!r} is awaiting_merge, not ended" in named.stderr
    assert branch_files(bench, run.id) == files


def test_the_age_decides_which_ended_runs_are_archived(tmp_path: Path, monkeypatch: Any) -> None:
    # issue 27: --older-than DAYS: a run ended 40 days ago is kept at 50 and at 0 (never), archived at 39
    bench, run_id = ended_run(tmp_path, monkeypatch)
    files = branch_files(bench, run_id)
    for days in ("50", "0"):
        kept = interlock(bench, "archive", "--older-than", days)
        assert kept.returncode == 0 and kept.stdout.startswith("no ended run"), kept.stderr
        assert branch_files(bench, run_id) == files
    assert interlock(bench, "archive", "--older-than", "39").stdout == f"run {run_id}: archived\n"
    assert branch_files(bench, run_id) == []
    refused = interlock(bench, "archive", "--older-than", "-1")
    assert refused.returncode == 2 and "--older-than must be 0 (never) or more days" in refused.stderr


def test_a_young_ended_run_is_kept_at_the_default_age(tmp_path: Path, monkeypatch: Any) -> None:
    # issue 27: the default age (30 days): a run abandoned now stays
    bench, run_id = ended_run(tmp_path, monkeypatch, at=datetime.now(UTC))
    assert interlock(bench, "archive").stdout.startswith("no ended run older than 30 days")
    assert branch_files(bench, run_id) != []


def test_a_tampered_archive_fails_verify_naming_the_file(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC J6: the archive holds the events the chain vouches for; one edited event is found as before archiving
    bench, run_id = ended_run(tmp_path, monkeypatch)
    assert interlock(bench, "archive").returncode == 0
    path = archive_path(run_id)
    files = unpack(
        subprocess.run(
            ["git", "show", f"interlock/state:{path}"], cwd=bench.folder, capture_output=True, check=True
        ).stdout,
        path,
    )
    review = mission_path(run_id, 2, "review")
    files[review] = files[review].replace(b"missing", b"Missing", 1)
    commit_on_state(bench, path, pack(files))
    result = interlock(bench, "verify", run_id, "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    found = json.loads(result.stdout)["found"]
    assert (found["kind"], found["path"]) == ("edited mission record", review)


def test_a_malformed_archive_is_a_clear_error(tmp_path: Path, monkeypatch: Any) -> None:
    # issue 27: an archive that is not one is named in one line, exit 2, no traceback
    bench, run_id = ended_run(tmp_path, monkeypatch)
    assert interlock(bench, "archive").returncode == 0
    commit_on_state(bench, archive_path(run_id), gzip.compress(b"not json\n"))
    result = interlock(bench, "verify", run_id)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{archive_path(run_id)} is not an Interlock archive: line 1 is not" in result.stderr
    with pytest.raises(ArchiveUnreadable, match="not gzip'd"):
        unpack(b"plain bytes", "archive/x.jsonl.gz")


def test_the_readme_says_what_archive_does() -> None:
    # SPEC GH4 (issue 27): the state branch stays small; the README's words are the command's behaviour tested above
    from app.store.archive import DEFAULT_DAYS
    from tests.helpers import doc

    text = " ".join(doc("local/journal.md").split())
    section = text.split("**Archiving ended runs.**", 1)[1].split("### ", 1)[0]
    assert f"last written more than {DEFAULT_DAYS} days ago (`--older-than`; 0 archives none)" in section
    assert f"`{archive_path('<run-id>')}`" in section and "one compare-and-swap commit per run" in section
    assert "an edited archive fails `verify`" in section and "a run that has not ended is refused" in section
    assert "`interlock archive --remote`" in section  # on GitHub: tests/store/test_archive_remote.py


def test_a_file_written_after_the_archive_is_packed_with_it_never_over_it(tmp_path: Path, monkeypatch: Any) -> None:
    # SPEC C5 (issue 27): a late file (a mission record stored after the run was archived) brings the folder back;
    # archiving again adds it to the archive, and every file archived before stays, so verify still passes
    bench, run_id = ended_run(tmp_path, monkeypatch)
    assert interlock(bench, "archive").returncode == 0
    show = ["git", "show", f"interlock/state:{archive_path(run_id)}"]
    before = unpack(subprocess.run(show, cwd=bench.folder, capture_output=True, check=True).stdout, "x")
    worktree = tmp_path / "late-writer"
    git(bench, "worktree", "add", "--quiet", str(worktree), "interlock/state")
    late = worktree / "runs" / run_id / "missions" / "late.json"
    late.parent.mkdir(parents=True)
    late.write_text("{}\n")
    subprocess.run(["git", "add", "-A"], cwd=worktree, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "late"], cwd=worktree, check=True
    )
    again = interlock(bench, "archive", run_id)
    assert again.returncode == 0 and again.stdout == f"run {run_id}: archived\n", again.stderr
    after = unpack(subprocess.run(show, cwd=bench.folder, capture_output=True, check=True).stdout, "x")
    assert after == {**before, f"runs/{run_id}/missions/late.json": b"{}\n"} and branch_files(bench, run_id) == []
    verified = interlock(bench, "verify", run_id)
    assert verified.returncode == 0 and "verified" in verified.stdout, verified.stdout + verified.stderr
