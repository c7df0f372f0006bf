"""The job's deliver path in journal layout v2 (issue 27 part 4): it reads the order where the run's layout puts
it, stores the mission record there, and a run written before v2 moves to v2 in the job's own one commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

from app.store.journal import STATE_BRANCH, mission_path, order_path
from app.store.layout import V2, layout_path, placed
from tests.runner.test_job import RUN, job, seed_origin, state_file


def tree(origin: Path, ref: str = STATE_BRANCH) -> dict[str, str]:
    """Every file of ``ref`` with its blob id."""
    listing = subprocess.run(
        ["git", "--git-dir", str(origin), "ls-tree", "-r", ref], capture_output=True, text=True, check=True
    ).stdout
    return {line.split("\t")[1]: line.split()[2] for line in listing.splitlines()}


def head(origin: Path, ref: str = STATE_BRANCH) -> str:
    found = subprocess.run(["git", "--git-dir", str(origin), "rev-parse", ref], capture_output=True, text=True)
    return found.stdout.strip()


def test_a_v1_run_moves_to_v2_in_the_commit_of_the_jobs_record(tmp_path: Path) -> None:
    # SPEC J2, J6, C5: the job's record lands in one commit that also moves the v1 run's order to its bucket,
    # the same blob (every hash the chain recorded stays true), and says layout v2
    origin = seed_origin(tmp_path)
    before, seeded = head(origin), tree(origin)
    order = order_path(RUN, 1, "build")
    assert order in seeded and layout_path(RUN) not in seeded
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    parents = subprocess.run(
        ["git", "--git-dir", str(origin), "rev-parse", f"{STATE_BRANCH}^@"], capture_output=True, text=True
    ).stdout.split()
    assert parents == [before]  # one commit on the head the job read
    after = tree(origin)
    assert state_file(origin, layout_path(RUN)) == {"layout": 2}
    assert order not in after and after[placed(order, V2)] == seeded[order]
    record = mission_path(RUN, 1, "build")
    assert record not in after and placed(record, V2) in after
    assert state_file(origin, record)["status"] == "done"


def test_a_v2_run_gets_its_order_read_from_its_bucket_and_its_record_stored_there(tmp_path: Path) -> None:
    # SPEC GH3, J6: a run the service wrote in v2 has no order at the v1 place; the job finds it in its bucket
    origin = seed_origin(tmp_path, layout=V2)
    order = order_path(RUN, 1, "build")
    assert order not in tree(origin) and placed(order, V2) in tree(origin)
    result, _ = job(origin, tmp_path)
    assert result.returncode == 0, result.stderr
    after = tree(origin)
    assert placed(mission_path(RUN, 1, "build"), V2) in after and mission_path(RUN, 1, "build") not in after
    assert not [path for path in after if path.count("/") == 3 and "/missions/" in path]  # nothing at a v1 place


def test_a_layout_this_interlock_does_not_know_stops_the_job_and_writes_nothing(tmp_path: Path) -> None:
    # SPEC C5: a run whose layout.json names a layout the job cannot place files in is refused, clearly
    origin = seed_origin(tmp_path)
    seed = tmp_path / "edit"
    subprocess.run(["git", "clone", "--quiet", "-b", STATE_BRANCH, str(origin), str(seed)], check=True)
    (seed / layout_path(RUN)).write_text('{"layout": 3}\n')
    for command in (["add", layout_path(RUN)], ["commit", "--quiet", "-m", "edited"], ["push", "--quiet"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *command], cwd=seed, check=True)
    edited = head(origin)
    result, _ = job(origin, tmp_path)
    assert result.returncode != 0
    assert "layout 3, which this Interlock does not know" in result.stderr + result.stdout
    assert head(origin) == edited
