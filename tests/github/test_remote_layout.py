# ruff: noqa: F811 - `world` and `served` are imported fixtures, which pytest passes by name
"""Journal layout v2 on GitHub's state branch (issue 27 part 4): the service writes a new run in v2; a run written
before v2 is read, and moved to v2 by the service's next write to it, in that write's one commit, its files' bytes
unchanged; the reports and ``verify`` (the real console script, from the stand-in on loopback) give the same
answers before and after."""

from __future__ import annotations

import json
import re

import pytest

from app.engine.errors import VersionConflict
from app.engine.record import Status
from app.store.github import GitHubStore
from app.store.layout import SHARDED, V2, layout_file, layout_path, logical, placed
from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures
from tests.github.test_remote_reports import STATE, app_env, interlock, served  # noqa: F401 - fixtures
from tests.helpers import doc

RUN = "issue-1"
COMMANDS = [["status", "--json"], ["journey", "--json"], ["money", "--json"], ["verify"]]


def rewritten(world: World, files: dict[str, str], message: str) -> str:
    fake = world.fake
    head = fake.refs[(REPO, STATE)]
    fake.refs[(REPO, STATE)] = fake._store_commit(fake._store_tree(files), [head], message)
    return fake.refs[(REPO, STATE)]


def as_v1(world: World) -> str:
    """The run's files put back where layout v1 put them and its ``layout.json`` gone, in one commit: the run as
    an Interlock before v2 wrote it. Returns that commit."""
    files = world.fake.files_at(REPO, STATE)
    mine = f"runs/{RUN}/"
    kept = {logical(path) if path.startswith(mine) else path: text for path, text in files.items()}
    del kept[layout_path(RUN)]
    return rewritten(world, kept, "layout v1")


def moved_to_v2(world: World) -> None:
    """The run's files put where layout v2 puts them, in one commit, as ``interlock migrate`` does locally."""
    files = world.fake.files_at(REPO, STATE)
    moved = {placed(path, V2) if path.startswith(f"runs/{RUN}/") else path: text for path, text in files.items()}
    moved[layout_path(RUN)] = layout_file(V2).decode()
    rewritten(world, moved, "layout v2")


def numbered_files(files: dict[str, str]) -> dict[str, str]:
    """The run's files of the folders v2 shards, by the path they lie at."""
    return {path: text for path, text in files.items() if path.split("/")[2:3] in ([f] for f in SHARDED)}


def test_the_service_writes_a_new_run_in_layout_v2(served: str, world: World) -> None:
    # SPEC J6, C5: a new run says its layout; its orders, mission records and events lie in buckets
    files = world.fake.files_at(REPO, STATE)
    assert json.loads(files[layout_path(RUN)]) == {"layout": 2}
    shards = numbered_files(files)
    assert "runs/issue-1/orders/0000/0001-build.json" in shards and "runs/issue-1/events/0000/000001.json" in shards
    assert "runs/issue-1/missions/0000/0002-build.json" in shards  # the job's record, where the run's layout puts it
    assert all(path.split("/")[3] == "0000" for path in shards), sorted(shards)
    clean = interlock("verify", RUN, "--repo", REPO, **app_env(served))
    assert clean.returncode == 0 and "verified" in clean.stdout, clean.stdout + clean.stderr


def test_reports_and_verify_on_github_are_the_same_in_either_layout(world: World, served: str) -> None:
    # SPEC J6: the reports and verify name files by their logical paths and read them where the layout puts them
    env = app_env(served)
    as_v1(world)
    assert "runs/issue-1/missions/0002-build.json" in world.fake.files_at(REPO, STATE)
    before = [interlock(*command, RUN, "--repo", REPO, **env) for command in COMMANDS]
    assert all(result.returncode == 0 for result in before), [(r.stdout[-800:], r.stderr) for r in before]
    assert "verified" in before[-1].stdout and '"mission": 2' in before[0].stdout
    moved_to_v2(world)
    placed_now = world.fake.files_at(REPO, STATE)
    assert "runs/issue-1/missions/0000/0002-build.json" in placed_now
    assert "runs/issue-1/missions/0002-build.json" not in placed_now
    after = [interlock(*command, RUN, "--repo", REPO, **env) for command in COMMANDS]
    old, new = "runs/issue-1/missions/0002-build.json", "runs/issue-1/missions/0000/0002-build.json"
    assert old in before[0].stdout and new in after[0].stdout  # the gate's `git show` names where the file lies
    assert [result.stdout.replace(new, old) for result in after] == [result.stdout for result in before]


def test_a_v1_run_moves_to_v2_in_the_commit_of_its_next_write(world: World, served: str) -> None:
    # SPEC J2, J6, C5: the service's next write to a v1 run moves its files in that write's one commit (CAS by
    # fast-forward on the head read), every file's bytes unchanged, so verify passes before and after
    env = app_env(served)
    v1_head = as_v1(world)
    v1_files = world.fake.files_at(REPO, STATE)
    v1_numbered = numbered_files(v1_files)
    assert v1_numbered and all(len(path.split("/")) == 4 for path in v1_numbered)  # runs/<id>/<folder>/<file>
    checked = interlock("verify", RUN, "--repo", REPO, **env)
    assert checked.returncode == 0 and "verified" in checked.stdout, checked.stdout + checked.stderr
    version = world.run(1).version
    sent = len(world.fake.requests)
    world.review(1, "approved")  # the gate opens: the service's next write to the run
    git_data = [(r.method, re.search(r"/git/(trees|commits|refs)\b", r.url.path)) for r in world.fake.requests[sent:]]
    assert [f"{method} {found[1]}" for method, found in git_data if found] == [
        "GET commits",  # the head's tree (two reads, as the README says)
        "GET trees",  # listed, with the blob ids to move
        "POST trees",  # three content-creating requests: the tree, the commit, the fast-forward
        "POST commits",
        "PATCH refs",
    ]
    assert not any("createCommitOnBranch" in r.content.decode() for r in world.fake.requests[sent:])
    head = world.fake.refs[(REPO, STATE)]
    assert world.fake.commits[head]["parents"] == [v1_head]  # one commit: the move and the transition together
    files = world.fake.files_at(REPO, STATE)
    assert json.loads(files[layout_path(RUN)]) == {"layout": 2}
    for path, text in v1_numbered.items():
        assert path not in files and files[placed(path, V2)] == text  # moved, not rewritten
    run = world.run(1)
    assert run.version > version and run.status is not Status.GATE_WAIT
    listed = [call for call in world.fake.calls("GET") if "/git/trees/" in call]
    assert listed == [f"GET /repos/{REPO}/git/trees/{world.fake.commits[v1_head]['tree']}"]
    after = interlock("verify", RUN, "--repo", REPO, **env)
    assert after.returncode == 0 and f"versions 1-{run.version}" in after.stdout, after.stdout + after.stderr
    assert run.waiting is not None
    world.job_done(1, run.waiting.seq, run.stage, "Looks right.\nVERDICT: PASS")  # a v2 run's write: no move
    assert world.run(1).version > run.version
    assert [call for call in world.fake.calls("GET") if "/git/trees/" in call] == listed
    later = world.fake.files_at(REPO, STATE)
    assert all(len(path.split("/")) == 5 for path in numbered_files(later))  # nothing written at v1 places
    final = interlock("verify", RUN, "--repo", REPO, **env)
    assert final.returncode == 0 and "verified" in final.stdout, final.stdout + final.stderr


def test_a_moved_branch_makes_the_migrating_write_a_conflict_and_leaves_the_v1_run(world: World, served: str) -> None:
    # SPEC J2, C5: the migrating commit is built on the head read; another writer's commit in between makes
    # its fast-forward fail, the branch keeps the other writer's commit and the run stays whole in v1
    as_v1(world)
    store = GitHubStore(world.app.installation(42), REPO)
    run = store.load(RUN)
    world.fake.commit_file(REPO, STATE, "queues/other.json", "{}")
    moved = world.fake.refs[(REPO, STATE)]
    with pytest.raises(VersionConflict):
        store.save(run.but(version=run.version + 1), run.version)
    assert world.fake.refs[(REPO, STATE)] == moved
    files = world.fake.files_at(REPO, STATE)
    assert layout_path(RUN) not in files and "runs/issue-1/missions/0002-build.json" in files


def test_a_state_branch_too_large_to_list_keeps_the_run_in_v1_and_loses_nothing(world: World, served: str) -> None:
    # SPEC C5: when GitHub cuts the tree listing short, the write lands in v1 rather than moving half a run
    as_v1(world)
    world.fake.tree_limit = 3
    world.review(1, "approved")
    files = world.fake.files_at(REPO, STATE)
    assert layout_path(RUN) not in files and all(len(path.split("/")) == 4 for path in numbered_files(files))
    assert world.run(1).status is not Status.GATE_WAIT
    checked = interlock("verify", RUN, "--repo", REPO, **app_env(served))
    assert checked.returncode == 0 and "verified" in checked.stdout, checked.stdout + checked.stderr


def test_the_readme_says_what_the_service_and_the_job_do_with_layout_v2() -> None:
    # the README's "Journal layout v2" paragraph, as the tests above and tests/runner/test_job_layout.py check it
    text = " ".join(doc("github/action.md", "local/journal.md").split())
    paragraph = text[text.index("**Journal layout v2.**") : text.index("## Tamper evidence")]
    for said in (
        "On GitHub the service writes a new run in v2 too",  # test_the_service_writes_a_new_run_in_layout_v2
        "a job stores its mission record where the run's layout puts it",  # test_job_layout
        "moves to v2 with the next write to it, the service's transition or the job's mission record, in that "
        "write's one commit",  # test_a_v1_run_moves_to_v2_in_the_commit_of_its_next_write, test_job_layout
        "two reads, then a tree, a commit and a fast-forward of the branch, three content-creating requests",
        "makes that fast-forward fail",  # test_a_moved_branch_makes_the_migrating_write_a_conflict...
        "too large for GitHub to list in one answer keeps the run in v1",  # test_a_state_branch_too_large...
        "a mission record that a job of an Interlock before v2 stored at its v1 place is still read",
    ):
        assert said in paragraph, said
    assert (
        "(in its bucket, [journal layout v2](../local/journal.md); a run written in layout v1 moves to v2 in "
        "that commit)" in text
    )


def test_a_mission_record_at_its_v1_place_in_a_v2_run_is_still_read(world: World, served: str) -> None:
    # SPEC C5: a workflow pinned to an Interlock before v2 stores its record at the v1 place; nothing is lost
    from app.store.github_reader import GitHubStateReader

    path = "runs/issue-1/missions/0009-build.json"
    world.fake.commit_file(REPO, STATE, path, '{"seq": 9}', as_is=True)
    store = GitHubStore(world.app.installation(42), REPO)
    store.load(RUN, (path, "runs/issue-1/missions/0002-build.json"))
    assert store.fetched[path] == b'{"seq": 9}' and store.fetched["runs/issue-1/missions/0002-build.json"]
    reader = GitHubStateReader(world.app.installation(42), REPO)
    reader.load(RUN)
    assert reader.read(path) == b'{"seq": 9}'
    assert {path, "runs/issue-1/missions/0002-build.json"} <= set(reader.list_files("runs/issue-1/missions/"))
