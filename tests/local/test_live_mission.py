"""Never two runners for one mission, locally (issue 28, part 2): a resume of a run whose mission runs in another
process is refused, naming the mission and since when, and the agent runs once."""

from __future__ import annotations

from pathlib import Path

from tests.local.test_processes import interlock, setup, start, wait_for


def test_a_resume_while_the_mission_runs_is_refused_naming_it(tmp_path: Path) -> None:
    # issue 28, part 2: the runner holds the run's lock while its agent works; a second command is refused
    go = tmp_path / "go"
    work = {"answer": "VERDICT: PASS", "write": {"a.txt": "x"}, "sleep": 60, "until": str(go)}
    repo, env = setup(tmp_path, {"work": work, "review": {"answer": "VERDICT: PASS"}})
    runner = start(tmp_path, repo, env, "live")
    try:
        wait_for(tmp_path / "log" / "0001-work.txt")
        refused = interlock("resume", "live", env=env, repo=repo)
        assert refused.returncode == 2, refused.stderr
        assert (
            "mission #1 (work) is running since " in refused.stderr and "`interlock stop live` first" in refused.stderr
        )
    finally:
        go.write_text("")
        runner.wait(timeout=60)
    assert runner.returncode == 0, runner.stderr.read() if runner.stderr else ""
    assert sorted(path.name for path in (tmp_path / "log").glob("*-work.txt")) == ["0001-work.txt"]
