"""The sweep as the service runs it (SPEC GH8): started and stopped with the service, turned off by a setting,
counted in /metrics, its settings checked, and the README's words about it."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.webhooks.deliveries.sqlite_queue import SqliteDeliveryQueue
from app.webhooks.deliveries.sweep_settings import (
    DEFAULT_INTERVAL_S,
    DEFAULT_LOOKBACK,
    DEFAULT_MAX_PER_HOUR,
    MIN_INTERVAL_S,
    SweepSettings,
)
from app.webhooks.router import Router
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings, SettingsError, settings_from_env
from tests.github.fake_github import FakeGitHub
from tests.helpers import ROOT, doc
from tests.webhooks.conftest import pem_key
from tests.webhooks.test_sweep import attempt, github

BASE = {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_PRIVATE_KEY": pem_key()}


def test_the_service_sweeps_by_itself_survives_a_bad_sweep_and_counts_what_it_swept(
    settings: ServiceSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC GH8: the sweep runs in the service, with no person needed; an error ends one sweep, not the service
    fake = FakeGitHub()
    fake.hook_deliveries = [attempt(1, "a", 5, 502)]
    fake.hook_deliveries[0]["delivered_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 300))
    listed: list[int] = []

    def first_listing_broken(request: httpx.Request) -> httpx.Response | None:
        if request.method == "GET":
            listed.append(1)
            if len(listed) == 1:
                return httpx.Response(200, json={"message": "not a list"})
        return None

    swept = replace(settings, sweep=SweepSettings(interval_s=0.05, lookback=timedelta(hours=1), max_per_hour=5))
    queue = SqliteDeliveryQueue(tmp_path / "queue.sqlite3")
    app = create_app(swept, Router(), queue=queue, github=github(fake, settings, first_listing_broken))
    with caplog.at_level(logging.ERROR, logger="interlock.webhooks"), TestClient(app) as client:
        give_up = time.monotonic() + 30  # only keeps a broken test from hanging
        while not fake.redelivered and time.monotonic() < give_up:
            time.sleep(0.02)
        assert fake.redelivered == [1]
        assert 'interlock_queue_deliveries_total{kind="swept"} 1' in client.get("/metrics").text
        assert client.get("/healthz").status_code == 200
    assert any("sweep refused" in r.getMessage() for r in caplog.records)
    assert app.state.sweeper.thread is not None and not app.state.sweeper.thread.is_alive()  # stopped with it
    assert fake.redelivered == [1]  # every later sweep found it asked for already


def test_the_sweep_is_on_by_default_and_off_with_interval_zero(tmp_path: Path) -> None:
    # SPEC GH8: every setting does something: INTERLOCK_SWEEP_S=0 makes no sweeper at all
    queue = SqliteDeliveryQueue(tmp_path / "queue.sqlite3")
    on = settings_from_env(BASE)
    assert on.sweep == SweepSettings(float(DEFAULT_INTERVAL_S), timedelta(hours=6), DEFAULT_MAX_PER_HOUR)
    assert create_app(on, Router(), queue=queue).state.sweeper.settings.interval_s == 300
    off = settings_from_env({**BASE, "INTERLOCK_SWEEP_S": "0"})
    assert off.sweep is None and create_app(off, Router(), queue=queue).state.sweeper is None
    chosen = settings_from_env(
        {**BASE, "INTERLOCK_SWEEP_S": "60", "INTERLOCK_SWEEP_LOOKBACK": "90m", "INTERLOCK_SWEEP_MAX_PER_HOUR": "7"}
    )
    assert chosen.sweep == SweepSettings(60.0, timedelta(minutes=90), 7)


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("INTERLOCK_SWEEP_S", "5", f"INTERLOCK_SWEEP_S=5 is too short: 0 (off) or at least {MIN_INTERVAL_S} seconds"),
        ("INTERLOCK_SWEEP_S", "-1", "INTERLOCK_SWEEP_S='-1' is not a whole number"),
        ("INTERLOCK_SWEEP_LOOKBACK", "4d", "INTERLOCK_SWEEP_LOOKBACK='4d' is not a duration"),
        ("INTERLOCK_SWEEP_LOOKBACK", "0h", "at most 3d (GitHub keeps three days of deliveries)"),
        ("INTERLOCK_SWEEP_LOOKBACK", "yesterday", "such as 30m, 6h or 2d"),
        ("INTERLOCK_SWEEP_MAX_PER_HOUR", "0", "would redeliver nothing: set INTERLOCK_SWEEP_S=0 instead"),
        ("INTERLOCK_SWEEP_MAX_PER_HOUR", "lots", "INTERLOCK_SWEEP_MAX_PER_HOUR='lots' is not a whole number"),
    ],
)
def test_each_sweep_setting_is_checked_naming_its_variable(name: str, value: str, says: str) -> None:
    # SPEC GH8: a sweep setting that makes no sense stops the start, named
    with pytest.raises(SettingsError) as caught:
        settings_from_env({**BASE, name: value})
    assert says in str(caught.value)


def test_the_readme_says_what_the_sweep_does() -> None:
    # the README's words and figures are the code's
    section = doc("operating/service.md").split("# The service", 1)[1]
    said = " ".join(section.split("\n## ", 1)[0].split())
    assert (
        "**Failed deliveries come back by themselves** (SPEC GH8). Every `INTERLOCK_SWEEP_S` seconds "
        f"({DEFAULT_INTERVAL_S}) one replica lists the App's deliveries of the last `INTERLOCK_SWEEP_LOOKBACK` "
        f"({DEFAULT_LOOKBACK}, at most 3d: GitHub keeps three days) and asks GitHub to redeliver each one whose every "
        "attempt failed, unless the queue already holds it (waiting, running or applied)."
    ) in said
    assert (
        f"At most `INTERLOCK_SWEEP_MAX_PER_HOUR` ({DEFAULT_MAX_PER_HOUR}) redeliveries are asked for in any hour, "
        "by all replicas together (through `INTERLOCK_REDIS_URL` when set), and each delivery once within the "
        "lookback; one GitHub refuses is asked for again at the next sweep."
    ) in said
    assert (
        "A failed attempt is one GitHub answers with a status code of 400 or more, or a status other than `OK` (a "
        "timeout, no connection); a redelivery GitHub made that succeeded counts."
    ) in said  # test_sweep.py's first test lists each kind
    assert "`/metrics` counts them as `swept`." in said
    assert (
        "A sweep that fails (GitHub down, a listing that is not a list of deliveries) is logged and redelivers "
        "nothing; the next one tries again. `INTERLOCK_SWEEP_S=0` turns the sweep off."
    ) in said
    assert (
        "`interlock redeliver --since 1h` asks for the failed deliveries of that listing by hand, without the "
        "queue's check or the bound."
    ) in said
    assert "failed_deliveries(app, window)" in ROOT.joinpath("app/cli/service.py").read_text()  # the sweep's listing
    assert '`interlock_queue_deliveries_total{kind="queued|applied|retried|deferred|failed|swept"}`' in said
