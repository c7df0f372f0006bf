"""Two runs of one repository saved at once (a team's queue with `concurrency: 2`, issue 13): the branch moved
by the other run's save between this save's read and its swap is no conflict for this run, saved again."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from app.engine.errors import VersionConflict
from app.store.gitstore import GitStore
from tests.local.harness import make_repo
from tests.store.test_gitstore import advanced


def test_a_save_whose_branch_another_run_moved_is_saved_again_on_the_new_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SPEC J2: of two writers of one record one wins; writers of two records both win
    make_repo(tmp_path)
    mine, theirs = GitStore(tmp_path), GitStore(tmp_path)
    other = advanced(0).run.but(id="run-2")
    tree_with = GitStore._tree_with
    calls: list[int] = []

    def other_saves_first(self: GitStore, *args: Any) -> Any:
        if self is mine and not calls:
            calls.append(1)
            theirs.save(other, None)  # between this save's read of the head and its swap
        return tree_with(self, *args)

    monkeypatch.setattr(GitStore, "_tree_with", other_saves_first)
    run = advanced(0).run
    mine.save(run, None)
    assert calls == [1]
    assert GitStore(tmp_path).load("run-1") == run and GitStore(tmp_path).load("run-2") == other


def test_many_runs_started_at_once_are_all_saved(tmp_path: Path) -> None:
    make_repo(tmp_path)
    failures: list[Exception] = []

    def start(number: int) -> None:
        try:
            GitStore(tmp_path).save(advanced(0).run.but(id=f"run-{number}"), None)
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(run.id for run in GitStore(tmp_path).list_runs()) == [f"run-{n}" for n in range(6)]
    with pytest.raises(VersionConflict):
        GitStore(tmp_path).save(advanced(0).run.but(id="run-3"), None)  # the same run twice is still refused
