# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""SPEC J6, issue 28 part 6: the head of a run's chain anchored where the state branch cannot rewrite it — the
run's check run (only the App writes it) and its status comment (the App's bot's) — and ``interlock verify --repo
OWNER/NAME`` holding the journal against them: a state branch reset to an earlier commit, or stripped of its chain,
fails, named; a lagging status comment and a person's comment quoting an anchor are no alarm. The real console
script against the stand-in on loopback."""

from __future__ import annotations

import json

from app.engine.anchor import anchors_in
from app.runner.chain import sha256
from app.store.journal import events_folder
from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures
from tests.github.test_remote_reports import STATE, app_env, interlock, served  # noqa: F401 - fixtures


def test_the_check_run_and_the_status_comment_carry_the_chains_head(world: World, served: str) -> None:
    # SPEC J6: a hidden machine-readable line and a visible one; the check's anchor is the record as stored
    record = world.fake.files_at(REPO, STATE)["runs/issue-1.json"]
    version = json.loads(record)["version"]
    summary = world.fake.checks_of("issue-1")[-1]["output"]["summary"]
    (anchor,) = anchors_in(summary, "issue-1")
    assert (anchor.version, anchor.hash) == (version, sha256(record.encode()))
    assert anchor.state == world.fake.refs[(REPO, STATE)]
    assert f"**Journal head** version {version}" in summary
    status = next(c for c in world.fake.comments.values() if "interlock:status run=issue-1" in c["body"])
    (comment_anchor,) = anchors_in(status["body"], "issue-1")
    assert comment_anchor.version <= version  # edited only when a person has something to do: it may lag
    clean = interlock("verify", "issue-1", "--repo", REPO, **app_env(served))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"the check run (version {version})" in clean.stdout and "the status comment (version" in clean.stdout


def test_a_state_branch_reset_to_an_earlier_commit_fails_on_github(world: World, served: str) -> None:
    # SPEC J6: the earlier commit is a consistent journal; the check run says a later version was written
    latest = json.loads(world.fake.files_at(REPO, STATE)["runs/issue-1.json"])["version"]
    head = world.fake.refs[(REPO, STATE)]
    earlier = head
    while json.loads(world.fake.trees[world.fake.commits[earlier]["tree"]]["runs/issue-1.json"])["version"] == latest:
        earlier = world.fake.commits[earlier]["parents"][0]
    world.fake.refs[(REPO, STATE)] = earlier
    result = interlock("verify", "issue-1", "--repo", REPO, "--json", **app_env(served))
    found = json.loads(result.stdout)["found"]
    assert result.returncode == 1 and found["kind"] == "rolled back" and found["version"] == latest, result.stdout
    assert "the check run says" in found["detail"] and "reset to an earlier commit" in found["detail"]


def test_a_journal_stripped_on_github_fails_and_a_persons_anchor_is_no_witness(world: World, served: str) -> None:
    # SPEC J6: every chain and events file removed ("verified 0 transitions", exit 0 before); a comment by a person
    # carrying a later anchor is not the App's and changes nothing in a clean journal
    files = world.fake.files_at(REPO, STATE)
    record = json.loads(files["runs/issue-1.json"])
    person = f"<!-- interlock:status run=issue-1 -->\n<!-- interlock:anchor run=issue-1 version=999 hash={'0' * 64} "
    world.fake.comments[5000] = {"repo": REPO, "issue": 1, "body": person + "state= -->", "user": "carol"}
    assert interlock("verify", "issue-1", "--repo", REPO, **app_env(served)).returncode == 0
    del record["chain"], record["rules"]
    world.fake.commit_file(REPO, STATE, "runs/issue-1.json", json.dumps(record, indent=1) + "\n")
    head = world.fake.refs[(REPO, STATE)]
    tree = dict(world.fake.trees[world.fake.commits[head]["tree"]])
    kept = {path: text for path, text in tree.items() if not path.startswith(events_folder("issue-1"))}
    world.fake.refs[(REPO, STATE)] = world.fake._store_commit(world.fake._store_tree(kept), [head], "stripped")
    result = interlock("verify", "issue-1", "--repo", REPO, **app_env(served))
    assert result.returncode == 1 and "stripped journal" in result.stdout, result.stdout + result.stderr
    assert "verified 0 transitions" not in result.stdout and "version 999" not in result.stdout
