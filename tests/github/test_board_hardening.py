"""The check run (SPEC W5) attacked as a hostile user would (issue 14): each test shows a defect found, now fixed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from app.engine.record import Reason, ReasonCode
from app.github.checks import SUMMARY_LIMIT, check_view
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []


@pytest.mark.parametrize("letter", ["é", "数", "🚀"])
def test_a_summary_in_another_script_fits_githubs_byte_limit(world: World, letter: str) -> None:
    # SPEC W5: GitHub refuses a summary over 65535 UTF-8 bytes ("summary exceeds a maximum bytesize of 65535"),
    # whatever its docs say of characters; a reason of 40,000 such letters was sent whole, so the check's write
    # failed with 422 and the delivery with it, at every redelivery.
    _, issue = world.label()
    run = world.run(issue)
    said = replace(run, reason=Reason(code=ReasonCode.MISSION_FAILED, stage="build", message=letter * 40_000))
    summary = check_view(said, world.runs().graph_of(run), REPO, str).summary
    assert len(summary.encode("utf-8")) <= SUMMARY_LIMIT and summary.endswith("holds at most 65535 bytes)")
    assert summary.startswith("**Run** `issue-1`") and letter * 1000 in summary  # cut at the end, letters whole
