"""The web board's Retry and Resume of a run whose mission's job still runs (issue 28, part 2): refused with the
mission named (409), no second job. A stale page, or a form posted by hand, sends them while the run runs."""

from __future__ import annotations

from app.engine.record import Status
from tests.webhooks.test_board import Site, site  # noqa: F401 - fixture


def test_a_board_retry_of_a_live_mission_is_refused_and_dispatches_nothing(site: Site) -> None:  # noqa: F811
    site.sign_in("alice")
    before, version = len(site.fake.dispatches), site.record()["version"]
    for action in ("retry", "resume"):
        refused = site.act(action)
        assert refused.status_code == 409, refused.text
        assert "mission #1 (build) is running since " in refused.text and "/interlock stop" in refused.text
    assert len(site.fake.dispatches) == before and site.record()["version"] == version
    assert site.record()["status"] == Status.RUNNING
