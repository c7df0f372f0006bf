# ruff: noqa: F811 - `world` and `served` are imported fixtures, which pytest passes by name
"""Journal layout v2 read through GitHub's API (issue 27 part 4): a run on the state branch moved to v2 gives
the same reports and the same ``verify`` answer, read by the real console script from the stand-in on loopback."""

from __future__ import annotations

from app.store.layout import V2, layout_file, layout_path, placed
from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures
from tests.github.test_remote_reports import STATE, app_env, interlock, served  # noqa: F401 - fixtures


def moved_to_v2(world: World, run_id: str) -> None:
    """The run's files put where layout v2 puts them, in one commit, as ``interlock migrate`` does locally."""
    fake = world.fake
    head = fake.refs[(REPO, STATE)]
    files = fake.files_at(REPO, STATE)
    mine = f"runs/{run_id}/"
    moved = {placed(path, V2) if path.startswith(mine) else path: text for path, text in files.items()}
    moved[layout_path(run_id)] = layout_file(V2).decode()
    fake.refs[(REPO, STATE)] = fake._store_commit(fake._store_tree(moved), [head], "layout v2")


def test_reports_and_verify_on_github_are_the_same_in_either_layout(world: World, served: str) -> None:
    # SPEC J6: the reports and verify name files by their logical paths and read them where the layout puts them
    env = app_env(served)
    commands = [["status", "--json"], ["journey", "--json"], ["money", "--json"], ["verify"]]
    before = [interlock(*command, "issue-1", "--repo", REPO, **env) for command in commands]
    assert all(result.returncode == 0 for result in before), [result.stderr for result in before]
    assert "verified" in before[-1].stdout and '"mission": 2' in before[0].stdout
    moved_to_v2(world, "issue-1")
    placed_now = world.fake.files_at(REPO, STATE)
    assert "runs/issue-1/missions/0000/0002-build.json" in placed_now
    assert "runs/issue-1/missions/0002-build.json" not in placed_now
    after = [interlock(*command, "issue-1", "--repo", REPO, **env) for command in commands]
    old, new = "runs/issue-1/missions/0002-build.json", "runs/issue-1/missions/0000/0002-build.json"
    assert old in before[0].stdout and new in after[0].stdout  # the gate's `git show` names where the file lies
    assert [result.stdout.replace(new, old) for result in after] == [result.stdout for result in before]
