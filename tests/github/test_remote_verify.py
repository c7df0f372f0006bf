# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""``interlock verify --repo OWNER/NAME RUN`` (SPEC J6): the state branch on GitHub read through the API at one
commit by the real console script, against the stand-in on loopback; a run the GitHub shell drove (its missions'
records stored by their jobs) verifies, and one edited byte of its record is named."""

from __future__ import annotations

import json

from tests.github.test_flows import REPO, World, retry_waits, world  # noqa: F401 - fixtures
from tests.github.test_remote_reports import STATE, app_env, interlock, served  # noqa: F401 - fixtures


def test_a_run_on_github_verifies_and_an_edited_byte_of_its_record_is_named(world: World, served: str) -> None:
    # SPEC J6: a clean run verifies remotely; then the record edited by hand on the state branch fails, named
    clean = interlock("verify", "issue-1", "--repo", REPO, **app_env(served))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    record = world.fake.files_at(REPO, STATE)["runs/issue-1.json"]
    version = json.loads(record)["version"]
    assert f"verified {version} transitions: run issue-1 versions 1-{version}" in clean.stdout
    assert json.loads(record)["chain"]["missions"]  # the job's mission record, vouched for by hash
    world.fake.commit_file(REPO, STATE, "runs/issue-1.json", record.replace('"build": 1', '"build": 2', 1))
    edited = interlock("verify", "issue-1", "--repo", REPO, "--json", **app_env(served))
    found = json.loads(edited.stdout)["found"]
    assert edited.returncode == 1 and (found["kind"], found["version"], found["path"]) == (
        "edited record",
        version,
        "runs/issue-1.json",
    )
