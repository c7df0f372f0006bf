"""The local journal: the layout, compare-and-swap on the ref, and crash safety (SPEC J1, J2, J5, GH4)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.engine.errors import RunNotFound, VersionConflict
from app.gitaccess import ON_GITHUB
from app.store.gitstore import GitStore, StoreError
from app.store.journal import mission_path
from tests.engine.driver import Driver, loop_graph
from tests.helpers import ROOT
from tests.local.harness import make_repo


def advanced(steps: int) -> Driver:
    d = Driver(loop_graph(work={"maxVisits": 1000}, review={"maxVisits": 1000}))
    for _ in range(steps):
        d.finish("x" + ("\nVERDICT: FAIL" if d.run.stage == "review" else ""))
    return d


def test_layout_and_round_trip_without_touching_the_work_tree(tmp_path: Path) -> None:
    # SPEC GH4, J1: runs/<id>.json, mission records beside it; the user's branch, index and files untouched
    repo = make_repo(tmp_path)
    (tmp_path / "scratch.txt").write_text("uncommitted work of the user")
    store = GitStore(tmp_path)
    d = advanced(1)
    store.save(d.run, None, {mission_path(d.run.id, 1, "work"): b'{"answer": "x"}'})
    assert store.load(d.run.id) == d.run
    # SPEC J1: the store lists logical names; layout v2's file and bucket are where they lie (app/store/layout.py)
    assert store.list_files("runs/") == [
        "runs/run-1.json",
        "runs/run-1/layout.json",
        "runs/run-1/missions/0001-work.json",
    ]
    shown = subprocess.run(
        ["git", "show", "interlock/state:runs/run-1.json"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(shown.stdout)["id"] == "run-1"
    assert repo.active_branch.name == "main" and repo.git.status("--porcelain") == "?? scratch.txt"
    with pytest.raises(RunNotFound):
        store.load("nope")


def test_compare_and_swap_one_of_two_writers_wins(tmp_path: Path) -> None:
    # SPEC J2
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    d = advanced(0)
    store.save(d.run, None)
    first, second = advanced(1).run, advanced(2).run
    store.save(first, d.run.version)
    with pytest.raises(VersionConflict) as caught:
        store.save(second, d.run.version)
    assert (caught.value.expected, caught.value.found) == (1, 2)
    assert store.load("run-1") == first
    with pytest.raises(VersionConflict):
        store.save(d.run, None)  # a second "new" run with the same id


def test_concurrent_writers_never_lose_an_update(tmp_path: Path) -> None:
    # SPEC J2: many threads in separate stores increment the version by CAS; every success is kept
    make_repo(tmp_path)
    base = advanced(0).run
    GitStore(tmp_path).save(base, None)
    wins: list[int] = []

    def writer() -> None:
        store = GitStore(tmp_path)
        for _ in range(15):
            while True:
                current = store.load("run-1")
                try:
                    store.save(current.but(version=current.version + 1), current.version)
                    wins.append(current.version + 1)
                    break
                except VersionConflict:
                    continue

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == list(range(2, 62))
    assert GitStore(tmp_path).load("run-1").version == 61


WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from app.store.gitstore import GitStore
store = GitStore(Path({repo!r}))
print("ready", flush=True)  # the kill's moment counts from here: importing takes long on a loaded machine
while True:
    run = store.load("run-1")
    big = {{"runs/run-1/missions/%06d-work.json" % run.version: b"x" * 200_000}}
    nxt = run.but(version=run.version + 1, recap="v%d" % (run.version + 1))
    store.save(nxt, run.version, big)
"""


def test_kill_9_at_any_moment_leaves_the_old_record_or_the_new_one(tmp_path: Path) -> None:
    # SPEC J1, J2: no torn record, ever
    make_repo(tmp_path)
    GitStore(tmp_path).save(advanced(0).run, None)
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT), repo=str(tmp_path)))
    last = 1
    for delay in (0.05, 0.13, 0.21, 0.34, 0.55, 0.08, 0.29):
        process = subprocess.Popen([sys.executable, str(script)], start_new_session=True, stdout=subprocess.PIPE)
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stdout.close()
        run = GitStore(tmp_path).load("run-1")  # parses: the record is whole
        assert run.version >= last and run.recap in ("", f"v{run.version}")
        last = run.version
    fsck = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=tmp_path, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert last > 1


def test_not_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a git repository"):
        GitStore(tmp_path / "nowhere")


def test_a_stale_lock_left_by_a_dead_writer_is_broken(tmp_path: Path) -> None:
    # SPEC J1: a writer killed inside git update-ref must not block the journal forever
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    store.save(advanced(0).run, None)
    lock = Path(store.path) / "refs/heads/interlock/state.lock"
    lock.write_text("")
    with pytest.raises(StoreError, match="lock"):
        store.save(advanced(1).run, 1)  # a fresh lock belongs to a live writer: respected
    old = time.time() - 60
    os.utime(lock, (old, old))
    store.save(advanced(1).run, 1)
    assert store.load("run-1").version == 2 and not lock.exists()


def test_each_save_is_one_pack_that_git_itself_reads_and_verifies(tmp_path: Path) -> None:
    # SPEC J1, J5: the journal is plain git: `git fsck --strict` passes, `git show` reads every file, and
    # the packs a save leaves are merged as the journal grows
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    d = advanced(0)
    store.save(d.run, None)
    packs = tmp_path / ".git" / "objects" / "pack"
    for seq in range(1, 131):
        previous = d.run.version
        d.finish("x" + ("\nVERDICT: FAIL" if d.run.stage == "review" else ""))
        store.save(d.run, previous, {mission_path(d.run.id, seq, "work"): f'{{"seq": {seq}}}'.encode()})
        if seq == 1:
            assert len(list(packs.glob("*.pack"))) == 2 and not list(packs.glob("tmp_*"))  # one a save
    store.close()  # the last merge, which runs beside the saves, has ended
    assert len(list(packs.glob("*.pack"))) < 40  # merged along the way, not one per save
    checked = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shown = subprocess.run(
        ["git", "show", "interlock/state:runs/run-1/missions/0001/0130-work.json"],  # layout v2: its bucket
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout) == {"seq": 130}
    assert GitStore(tmp_path).load(d.run.id) == d.run


def test_a_name_that_is_not_utf8_already_on_the_branch_is_kept(tmp_path: Path) -> None:
    # names are bytes in git: a save rewrites the trees on its paths and keeps every other entry as it was
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    d = advanced(0)
    store.save(d.run, None)
    git = ["git", "-C", str(tmp_path)]
    blob = subprocess.run([*git, "hash-object", "-w", "--stdin"], input=b"x", capture_output=True, check=True)
    runs = subprocess.run([*git, "rev-parse", "interlock/state:runs"], capture_output=True, text=True, check=True)
    listing = subprocess.run([*git, "ls-tree", "-z", runs.stdout.strip()], capture_output=True, check=True).stdout
    odd = listing + b"100644 blob " + blob.stdout.strip() + b"\tcaf\xe9.txt\0"
    tree = subprocess.run([*git, "mktree", "-z"], input=odd, capture_output=True, check=True).stdout.strip()
    root = subprocess.run([*git, "mktree"], input=b"040000 tree " + tree + b"\truns\n", capture_output=True, check=True)
    commit = subprocess.run(
        [*git, "commit-tree", root.stdout.strip().decode(), "-p", "interlock/state", "-m", "odd"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ON_GITHUB.env()},
    )
    subprocess.run([*git, "update-ref", "refs/heads/interlock/state", commit.stdout.strip()], check=True)
    d.finish("x")
    store.save(d.run, 1)
    names = subprocess.run([*git, "ls-tree", "-z", "--name-only", "interlock/state:runs"], capture_output=True).stdout
    assert b"caf\xe9.txt" in names.split(b"\0") and store.load(d.run.id) == d.run
    assert subprocess.run([*git, "fsck", "--strict", "--no-dangling"], capture_output=True).returncode == 0


def test_a_linked_worktree_saves_where_git_looks(tmp_path: Path) -> None:
    # a store opened in a linked worktree writes objects and the branch into the repository's own folder
    main = tmp_path / "main"
    main.mkdir()
    make_repo(main)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "--quiet", str(tmp_path / "wt")], check=True)
    d = advanced(1)
    GitStore(tmp_path / "wt").save(d.run, None)
    assert GitStore(main).load(d.run.id) == d.run == GitStore(tmp_path / "wt").load(d.run.id)
    shown = subprocess.run(["git", "-C", str(main), "show", "interlock/state:runs/run-1.json"], capture_output=True)
    assert shown.returncode == 0 and json.loads(shown.stdout)["version"] == d.run.version


def test_a_file_name_git_refuses_is_a_clear_error_and_nothing_moves(tmp_path: Path) -> None:
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    d = advanced(0)
    store.save(d.run, None)
    d.finish("x")
    with pytest.raises(StoreError, match="cannot name a file in a git tree"):
        store.save(d.run, 1, {"runs/run-1/../x.json": b"{}"})
    assert store.load(d.run.id).version == 1
