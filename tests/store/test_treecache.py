"""Saves splice their entries into the previous trees (app/store/treecache.py): the trees are git's own, the
journal's layout is unchanged, and a journal that git itself wrote still loads and takes new saves (SPEC J1, J5)."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from app.gitaccess import ON_GITHUB
from app.store import treecache
from app.store.gitstore import GitStore
from app.store.journal import encode_record, event_path, mission_path
from app.store.layout import V2, layout_path, placed
from tests.local.harness import make_repo
from tests.store.test_gitstore import advanced


def git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    env = {**os.environ, **ON_GITHUB.env()}
    return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=True, env=env).stdout


def fsck(repo: Path) -> None:
    checked = subprocess.run(["git", "-C", str(repo), "fsck", "--strict", "--no-dangling"], capture_output=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # sorted trees, no duplicate entries


def test_a_journal_written_by_git_itself_loads_and_takes_new_saves(tmp_path: Path) -> None:
    # SPEC J1: a journal written by another version (here by git's own plumbing, with names whose order is git's
    # rule, not Python's: "0002-x.json" before the folder "0002-x", "10000-" before "9999-") is read as it is
    make_repo(tmp_path)
    d = advanced(3)
    run = d.run
    old = {
        f"runs/{run.id}.json": encode_record(run),
        mission_path(run.id, 1, "work"): b'{"seq": 1}',
        mission_path(run.id, 9999, "work"): b'{"seq": 9999}',
        mission_path(run.id, 10000, "work"): b'{"seq": 10000}',
        f"runs/{run.id}/missions/0002-x.json": b"file",
        f"runs/{run.id}/missions/0002-x/inner.json": b"folder",
    }
    index = tmp_path / "old-index"
    env_index = {**os.environ, "GIT_INDEX_FILE": str(index)}
    for path, content in old.items():
        blob = git(tmp_path, "hash-object", "-w", "--stdin", data=content).decode().strip()
        subprocess.run(
            ["git", "-C", str(tmp_path), "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"],
            check=True,
            env=env_index,
        )
    tree = subprocess.run(
        ["git", "-C", str(tmp_path), "write-tree"], capture_output=True, text=True, check=True, env=env_index
    )
    commit = git(tmp_path, "commit-tree", tree.stdout.strip(), "-m", "written by git").decode().strip()
    git(tmp_path, "update-ref", "refs/heads/interlock/state", commit)

    store = GitStore(tmp_path)
    assert store.load(run.id) == run
    previous = run.version
    d.finish("x")
    store.save(d.run, previous, {mission_path(run.id, 4, "work"): b'{"seq": 4}'})
    store.close()
    fsck(tmp_path)
    listed = git(tmp_path, "ls-tree", "-r", "--name-only", "interlock/state").decode().split()
    # a v1 journal moves to layout v2 with its next save, in the same commit; a numbered folder stays where it is
    moved = [placed(path, V2) for path in [*old, mission_path(run.id, 4, "work")]]
    assert sorted(listed) == sorted([*moved, layout_path(run.id)])
    assert git(tmp_path, "show", f"interlock/state:runs/{run.id}/missions/0002-x/inner.json") == b"folder"
    assert GitStore(tmp_path).load(run.id) == d.run


def test_spliced_trees_are_the_ones_git_builds_from_the_same_files(tmp_path: Path) -> None:
    # every tree a save makes is byte for byte the tree git makes of the same entries: new files, replaced
    # files, a file replaced by a folder, in random order, across saves that start from the cached trees
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    d = advanced(0)
    store.save(d.run, None)
    files: dict[str, bytes] = {}
    names = [f"{n:04d}-s.json" for n in range(1, 40)] + ["a", "a.b", "a-b", "b"]
    chooser = random.Random(16)
    for step in range(60):
        changes = {}
        for _ in range(chooser.randint(1, 3)):
            folder = chooser.choice(["missions", "events", "missions/deep"])
            path = f"runs/{d.run.id}/{folder}/{chooser.choice(names)}"
            if any(other.startswith(path + "/") for other in files) or any(
                path.startswith(other + "/") for other in files
            ):
                continue  # a file and a folder of one name: the save keeps the newer, the model here cannot
            changes[path] = f"{step} {path}".encode()
        previous = d.run.version
        d.finish("x" + ("\nVERDICT: FAIL" if d.run.stage == "review" else ""))
        store.save(d.run, previous, changes)
        files.update(changes)
    store.close()  # the pack merge running beside the saves removes the packs it merged: fsck after it
    fsck(tmp_path)
    listed = set(git(tmp_path, "ls-tree", "-r", "--name-only", "interlock/state").decode().split())
    assert listed == {*(placed(path, V2) for path in files), f"runs/{d.run.id}.json", layout_path(d.run.id)}
    for folder in ("missions", "events", "missions/deep"):
        spec = f"interlock/state:runs/{d.run.id}/{folder}"
        rebuilt = git(tmp_path, "mktree", data=git(tmp_path, "ls-tree", spec)).strip()
        assert rebuilt == git(tmp_path, "rev-parse", spec).strip()


def test_a_save_after_a_save_reads_no_tree_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 16: the missions and events folders grow with the run; a save starts from the trees the last one
    # made instead of reading and parsing them again
    make_repo(tmp_path)
    store = GitStore(tmp_path)
    d = advanced(0)
    store.save(d.run, None)
    parsed: list[int] = []
    parse = treecache.Entries.parse

    def counted(raw: bytes) -> treecache.Entries:
        parsed.append(len(raw))
        return parse(raw)

    monkeypatch.setattr(treecache.Entries, "parse", counted)
    for seq in range(1, 6):
        previous = d.run.version
        d.finish("x" + ("\nVERDICT: FAIL" if d.run.stage == "review" else ""))
        store.save(
            d.run, previous, {mission_path(d.run.id, seq, "s"): b"{}", event_path(d.run.id, d.run.version): b"{}"}
        )
    assert parsed == []
    GitStore(tmp_path).save(d.run.but(version=d.run.version + 1), d.run.version)  # another process: reads them
    assert parsed


def test_a_record_another_writer_saved_since_is_read_not_taken_from_the_last_save(tmp_path: Path) -> None:
    # SPEC J2: the record this store saved last is reused only while the branch still names that save; once another
    # writer moved it, load reads the new record and a save on the old version is refused
    from app.engine.errors import VersionConflict

    make_repo(tmp_path)
    mine, theirs = GitStore(tmp_path), GitStore(tmp_path)
    d = advanced(0)
    mine.save(d.run, None)
    assert mine.load(d.run.id) is d.run  # the last save: nothing read back
    first = d.run
    d.finish("x")
    theirs.save(d.run, first.version, {mission_path(d.run.id, 1, "work"): b"{}"})
    assert mine.load(d.run.id) == d.run and mine.load(d.run.id) is not d.run
    with pytest.raises(VersionConflict):
        mine.save(first.but(stage="other"), first.version)
    assert mine.read(mission_path(d.run.id, 1, "work")) == b"{}"
