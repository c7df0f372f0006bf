"""The journal on GitHub's git data API: layout, compare-and-swap by fast-forward, faults (SPEC J2, GH4)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from app.engine.errors import VersionConflict
from app.github.client import GitHubApp, GitHubError
from app.store.github import GitHubStore
from app.store.layout import V1
from app.webhooks.settings import ServiceSettings
from tests.engine.driver import Driver, loop_graph
from tests.github.fake_github import FakeGitHub

REPO = "octo/app"


@pytest.fixture
def fake() -> FakeGitHub:
    return FakeGitHub()


def store_for(fake: FakeGitHub, settings: ServiceSettings) -> tuple[GitHubApp, GitHubStore]:
    app = GitHubApp(replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=fake.transport())
    return app, GitHubStore(app.installation(42), REPO)


def advanced(steps: int) -> Driver:
    d = Driver(loop_graph(work={"maxVisits": 100}, review={"maxVisits": 100}))
    for _ in range(steps):
        d.finish("x" + ("\nVERDICT: FAIL" if d.run.stage == "review" else ""))
    return d


def test_save_and_load_with_the_local_layout(fake: FakeGitHub, settings: ServiceSettings) -> None:
    # SPEC GH4: one JSON record per run, mission records beside it, on interlock/state; a new run in journal
    # layout v2 (issue 27: changed on purpose), its mission records in buckets, read back by their logical paths
    _, store = store_for(fake, settings)
    run = advanced(0).run
    store.save(run, None, {"runs/run-1/missions/0001-work.json": b'{"answer": "x"}'})
    assert store.load("run-1", ("runs/run-1/missions/0001-work.json",)) == run
    assert store.read("runs/run-1/missions/0001-work.json") == b'{"answer": "x"}'
    files = fake.files_at(REPO, "interlock/state")
    assert set(files) == {"runs/run-1.json", "runs/run-1/layout.json", "runs/run-1/missions/0000/0001-work.json"}
    assert json.loads(files["runs/run-1.json"])["id"] == "run-1"
    assert json.loads(files["runs/run-1/layout.json"]) == {"layout": 2}
    assert fake.problems == []


def test_layout_v1_writes_as_before_v2(fake: FakeGitHub, settings: ServiceSettings) -> None:
    # SPEC GH4: GitHubStore(layout=V1) writes a run as Interlock did before layout v2: what the tests build v1 runs with
    app = GitHubApp(replace(settings, api_url="http://github.test/api/v3").app_identity(), transport=fake.transport())
    store = GitHubStore(app.installation(42), REPO, layout=V1)
    store.save(advanced(0).run, None, {"runs/run-1/missions/0001-work.json": b"{}"})
    assert set(fake.files_at(REPO, "interlock/state")) == {"runs/run-1.json", "runs/run-1/missions/0001-work.json"}


def test_a_transition_costs_one_write_on_a_head_already_read(fake: FakeGitHub, settings: ServiceSettings) -> None:
    # issue 16: one createCommitOnBranch instead of a tree, a commit and a ref update (changed on purpose)
    _, store = store_for(fake, settings)
    store.save(advanced(0).run, None)
    store.load("run-1")
    before = len(fake.calls())
    store.save(advanced(1).run, 1)
    assert fake.calls()[before:] == ["POST /api/graphql"]
    assert "createCommitOnBranch" in json.loads(fake.requests[-1].content)["query"]


def test_a_concurrent_writer_makes_the_update_fail_and_the_loser_rereads(
    fake: FakeGitHub, settings: ServiceSettings
) -> None:
    # SPEC J2: the commit is built on the head read, so a moved branch is not a fast-forward (422)
    _, first = store_for(fake, settings)
    _, second = store_for(fake, settings)
    first.save(advanced(0).run, None)
    first.load("run-1")
    second.load("run-1")
    first.save(advanced(1).run, 1)
    with pytest.raises(VersionConflict) as caught:
        second.save(advanced(2).run, 1)
    assert (caught.value.expected, caught.value.found) == (1, 2)
    assert second.load("run-1").version == 2
    second.save(advanced(2).run.but(version=3), 2)
    assert first.load("run-1").version == 3


def test_server_errors_and_rate_limits_are_retried(fake: FakeGitHub, settings: ServiceSettings) -> None:
    # SPEC GH8: 5xx and secondary rate limits (403 with retry-after) are retried; nothing is applied twice
    _, store = store_for(fake, settings)
    fake.fail("POST", "/git/trees", 502)
    fake.fail("POST", "/git/commits", 403, headers={"retry-after": "1", "x-ratelimit-remaining": "0"})
    store.save(advanced(0).run, None)
    assert store.load("run-1").version == 1
    assert fake.calls().count("POST /repos/octo/app/git/trees") == 2
    assert fake.calls().count("POST /repos/octo/app/git/commits") == 2
    assert fake.calls().count("POST /repos/octo/app/git/refs") == 1


def test_a_429_with_retry_after_is_waited_for_and_retried(fake: FakeGitHub, settings: ServiceSettings) -> None:
    # SPEC GH8: primary and secondary rate limits answer 429 (or 403) with retry-after; the call is retried
    _, store = store_for(fake, settings)
    fake.fail("POST", "/git/refs", 429, headers={"retry-after": "1"})
    store.save(advanced(0).run, None)
    assert fake.calls().count("POST /repos/octo/app/git/refs") == 2 and store.load("run-1").version == 1
    assert len(fake.router.calls) == len(fake.requests)


def test_a_lasting_failure_is_an_error_and_leaves_the_old_record(fake: FakeGitHub, settings: ServiceSettings) -> None:
    _, store = store_for(fake, settings)
    store.save(advanced(0).run, None)
    store.load("run-1")
    fake.fail("POST", "createCommitOnBranch", 500, times=10)
    with pytest.raises(GitHubError):
        store.save(advanced(1).run, 1)
    assert store.load("run-1").version == 1


def test_a_new_run_never_overwrites_an_existing_one(fake: FakeGitHub, settings: ServiceSettings) -> None:
    _, store = store_for(fake, settings)
    store.save(advanced(0).run, None)
    with pytest.raises(VersionConflict):
        store.save(advanced(0).run, None)
