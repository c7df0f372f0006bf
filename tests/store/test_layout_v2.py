"""Journal layout v2 (issue 27 part 4): a run's numbered files in buckets, v1 runs read, migrated in one commit
(by ``interlock migrate`` or lazily by the next save) with every hash unchanged. Real git repositories in
temporary folders, runs made by the real run driver, the real console script."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest

from app.engine import events as ev
from app.engine.record import MissionStatus, Run
from app.runner.driver import RunDriver
from app.runner.verify import verify
from app.store import packwriter
from app.store.gitstore import GitStore
from app.store.journal import encode_json, mission_path, order_path, record_path
from app.store.layout import BUCKET, SHARDED, V1, layout_path, logical, sharded
from tests.bench.bench_langgraph import ANSWER, T0, interlock_graph
from tests.local.harness import make_repo

RUN = "long"
TRANSITIONS = 130  # past one bucket (100), so the folders have two


def advance(store: GitStore, run: Run, transitions: int, done: int = 0) -> Run:
    """``transitions`` missions finished through the run driver, each saving its mission record: what a local
    run saves (the record with its hash chain, the events file, the mission record, the next order)."""
    driver, graph = RunDriver(store), interlock_graph()
    for number in range(done + 1, done + transitions + 1):
        waiting = run.waiting
        assert waiting is not None
        answer = f"{ANSWER}\nVERDICT: FAIL" if waiting.stage == "review" else ANSWER
        event = ev.MissionFinished(
            key=f"m{number}",
            at=T0 + timedelta(seconds=number),
            seq=waiting.seq,
            status=MissionStatus.DONE,
            answer=answer,
            commits=1,
        )
        files = {mission_path(run.id, waiting.seq, waiting.stage): encode_json({"seq": waiting.seq})}
        run = driver.apply(run.id, lambda _current, e=event: e, graph, files).run
    return run


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose state branch holds one run of ``TRANSITIONS`` transitions written in layout v1, as
    Interlock wrote every run before v2; each test works on its own copy."""
    folder = tmp_path_factory.mktemp("v1")
    make_repo(folder)
    store = GitStore(folder, layout=V1)
    started = RunDriver(store).start(ev.Start(key="start", at=T0, run_id=RUN, title="t"), interlock_graph()).run
    advance(store, started, TRANSITIONS)
    store.close()
    return folder


@pytest.fixture
def v1_repo(v1_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(v1_template, tmp_path / "repo")
    return tmp_path / "repo"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def files_of(repo: Path) -> dict[str, str]:
    """Every file of the run on the branch: where it lies -> its blob id."""
    listed = git(repo, "ls-tree", "-r", "interlock/state", f"runs/{RUN}/").splitlines()
    return {line.split("\t")[1]: line.split()[2] for line in listed}


def interlock(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["interlock", *args, "--repo", str(repo)], capture_output=True, text=True, timeout=60)


def test_a_v1_run_reads_lists_and_verifies(v1_repo: Path) -> None:
    # SPEC J1, J6: a run written in layout v1 (no layout.json, flat folders) is read as it is
    placed = files_of(v1_repo)
    assert layout_path(RUN) not in placed and f"runs/{RUN}/events/000100.json" in placed
    store = GitStore(v1_repo)
    assert store.read(mission_path(RUN, 1, "plan")) == encode_json({"seq": 1})
    assert len(store.list_files(f"runs/{RUN}/events/")) == TRANSITIONS + 1
    found = verify(store, RUN)
    assert found.found is None and found.checked == TRANSITIONS + 1
    assert interlock(v1_repo, "verify", RUN).returncode == 0


def test_migrate_moves_every_file_in_one_commit_and_verify_is_unchanged(v1_repo: Path) -> None:
    # SPEC J2, J6, C5: `interlock migrate` moves the run to v2 in one compare-and-swap commit; the record and
    # every file keep their bytes (the same blobs), so the hash chain and verify's answer are the same before and after
    before, summary = files_of(v1_repo), interlock(v1_repo, "verify", RUN).stdout
    commits = int(git(v1_repo, "rev-list", "--count", "interlock/state"))
    moved = interlock(v1_repo, "migrate", RUN)
    assert moved.returncode == 0 and "moved to journal layout v2" in moved.stdout, moved.stderr
    after = files_of(v1_repo)
    assert int(git(v1_repo, "rev-list", "--count", "interlock/state")) == commits + 1
    assert {logical(path): blob for path, blob in after.items() if path != layout_path(RUN)} == before
    assert f"runs/{RUN}/events/0001/000100.json" in after and f"runs/{RUN}/events/000100.json" not in after
    assert interlock(v1_repo, "verify", RUN).stdout == summary
    assert "already in journal layout v2" in interlock(v1_repo, "migrate", "--all").stdout
    status = interlock(v1_repo, "status", RUN)
    assert status.returncode == 0 and RUN in status.stdout, status.stderr


def test_a_v1_run_moves_to_v2_in_the_commit_of_its_next_transition(v1_repo: Path) -> None:
    # SPEC J1, J5: lazy migration keeps one commit per transition: the next save writes its files and moves the rest
    commits = int(git(v1_repo, "rev-list", "--count", "interlock/state"))
    store = GitStore(v1_repo)
    run = advance(store, store.load(RUN), 1, TRANSITIONS)
    store.close()
    assert int(git(v1_repo, "rev-list", "--count", "interlock/state")) == commits + 1
    placed = files_of(v1_repo)
    assert layout_path(RUN) in placed
    assert all(path.count("/") == 4 for path in placed if path.split("/")[2] in SHARDED)  # none left flat
    found = verify(GitStore(v1_repo), RUN)
    assert found.found is None and found.checked == run.version


@pytest.mark.parametrize("where", ["pack", "ref"])
def test_a_migration_killed_before_its_commit_lands_leaves_the_v1_run_whole(
    v1_repo: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC J2, C5: a migration dies before its pack is written or before the branch moves (kill -9): the branch
    # still names the v1 run, whole and verifiable; migrating again moves it
    class Killed(BaseException):
        pass

    def die(*_args: object) -> None:
        raise Killed

    before = files_of(v1_repo)
    if where == "pack":
        monkeypatch.setattr(packwriter.PackWriter, "write", die)
    else:
        monkeypatch.setattr(GitStore, "_swap_ref", die)
    with pytest.raises(Killed):
        GitStore(v1_repo).migrate(RUN)
    monkeypatch.undo()
    assert files_of(v1_repo) == before
    assert verify(GitStore(v1_repo), RUN).found is None
    assert GitStore(v1_repo).migrate(RUN)
    assert verify(GitStore(v1_repo), RUN).found is None
    assert subprocess.run(["git", "-C", str(v1_repo), "fsck", "--strict", "--no-dangling"]).returncode == 0


def test_no_v2_tree_holds_more_than_a_bucket(v1_repo: Path) -> None:
    # SPEC J5 (issue 27 part 4): in v2 a save rewrites one bucket (<= BUCKET entries) and a folder of buckets
    store = GitStore(v1_repo)
    store.migrate(RUN)
    advance(store, store.load(RUN), 80, TRANSITIONS)  # into a third bucket of events
    store.close()
    assert sharded(order_path(RUN, 3001, "w01")) == f"runs/{RUN}/orders/0030/3001-w01.json"  # orders too
    for folder in ("missions", "events"):  # a local run stores no orders (the engine's prompts are in its records)
        buckets = git(v1_repo, "ls-tree", "--name-only", f"interlock/state:runs/{RUN}/{folder}").split()
        assert buckets and all(name.isdigit() for name in buckets)
        for name in buckets:
            inside = git(v1_repo, "ls-tree", "--name-only", f"interlock/state:runs/{RUN}/{folder}/{name}").split()
            assert 0 < len(inside) <= BUCKET
            assert {int(entry.split("-")[0].split(".")[0]) // BUCKET for entry in inside} == {int(name)}
    events = git(v1_repo, "ls-tree", "--name-only", f"interlock/state:runs/{RUN}/events").split()
    assert events == ["0000", "0001", "0002"]
    assert GitStore(v1_repo).read(record_path(RUN)) is not None


def test_kill_9_at_random_moments_of_migrate_all_leaves_each_run_whole(v1_repo: Path) -> None:
    # SPEC J2, C5: `interlock migrate --all` killed at random moments (kill -9): each run is whole in v1 or in v2,
    # verifies, and a later migrate finishes the work
    store = GitStore(v1_repo, layout=V1)
    for other in ("a", "b"):
        started = RunDriver(store).start(ev.Start(key="s", at=T0, run_id=other, title="t"), interlock_graph()).run
        advance(store, started, 5)
    store.close()
    chooser = random.Random(27)
    v1_head = git(v1_repo, "rev-parse", "interlock/state").strip()
    timed = time.monotonic()
    assert interlock(v1_repo, "migrate", "--all").returncode == 0  # how long a whole one takes, to aim the kills
    whole = time.monotonic() - timed
    git_dir = Path(git(v1_repo, "rev-parse", "--absolute-git-dir").strip())
    for _ in range(6):
        # a kill inside a ref swap leaves the dead writer's lock: the store breaks it once stale (STALE_LOCK_S),
        # git's own update-ref does not, so the test's reset clears it (the writer is dead: the lock is stale)
        (git_dir / "refs" / "heads" / "interlock" / "state.lock").unlink(missing_ok=True)
        git(v1_repo, "update-ref", "refs/heads/interlock/state", v1_head)  # every run v1 again
        process = subprocess.Popen(
            ["interlock", "migrate", "--all", "--repo", str(v1_repo)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            process.wait(timeout=chooser.uniform(0.75, 1.0) * whole)  # the migrating is the end of it
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        for run_id in (RUN, "a", "b"):
            listed = git(v1_repo, "ls-tree", "-r", "--name-only", "interlock/state", f"runs/{run_id}/").split()
            numbered = [path for path in listed if path.split("/")[2] in SHARDED]
            depth = {path.count("/") for path in numbered}
            assert depth == ({4} if layout_path(run_id) in listed else {3})  # all moved, or none
            assert verify(GitStore(v1_repo), run_id).found is None
    assert interlock(v1_repo, "migrate", "--all").returncode == 0
    assert all(GitStore(v1_repo).read(layout_path(run_id)) for run_id in (RUN, "a", "b"))


def test_migrate_refuses_bad_input_in_one_line_and_changes_nothing(v1_repo: Path) -> None:
    before = git(v1_repo, "rev-parse", "interlock/state")
    for args, said in [
        ((), "error: name one RUN or give --all (not both)"),
        ((RUN, "--all"), "error: name one RUN or give --all (not both)"),
        (("nope",), "error: no run 'nope' in refs/heads/interlock/state of"),
    ]:
        result = interlock(v1_repo, "migrate", *args)
        assert result.returncode == 2 and result.stderr.startswith(said) and len(result.stderr.splitlines()) == 1
    assert git(v1_repo, "rev-parse", "interlock/state") == before
