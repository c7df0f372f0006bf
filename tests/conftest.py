"""Fixtures shared by every test: a real redis-server (tests/redis_server.py), and githubkit's retries at once."""

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from hypothesis import settings

from tests.helpers import ROOT
from tests.redis_server import redis_url

__all__ = ["redis_url"]

# Property tests run at a fixed seed and their own example counts (issue 29): every run of the suite, in CI or on a
# laptop, tries the same examples, so its time and its verdict do not depend on luck, and no example database
# written by one run steers the next (`--hypothesis-seed` is ignored under it). A wider search by hand:
# `pytest --hypothesis-profile=default --hypothesis-seed=N tests/...` (tests/test_house.py then fails, as it should).
settings.register_profile("interlock", derandomize=True, database=None)
settings.load_profile("interlock")


@pytest.fixture(autouse=True)
def githubkit_retries_at_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """githubkit waits 1, 4 and 9 s before its three retries of a 5xx answer: in this process a test's client
    retries at once (14 s a test otherwise; tests/github/test_flows.py's ``retry_waits`` records the waits where a
    test reads them). A real service in a subprocess still waits, as in production."""
    import githubkit.core

    monkeypatch.setattr(githubkit.core, "time", SimpleNamespace(sleep=lambda _seconds: None))
    yield


SLOW_S = 20.0  # a test slower than this is named in the Development page, with why (issue 29)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After ``--durations=10``'s slowest ten: every test over ``SLOW_S`` seconds that docs/development.md does
    not name, so a slow test cannot creep into CI unseen. A line, not a failure: a loaded machine is no defect."""
    reports = [report for key in ("passed", "failed") for report in terminalreporter.stats.get(key, [])]
    slow = sorted({report.nodeid for report in reports if report.when == "call" and report.duration > SLOW_S})
    page = ROOT / "docs" / "development.md"
    named = page.read_text(encoding="utf-8") if page.exists() else ""
    unnamed = [nodeid for nodeid in slow if nodeid.split("[")[0].split("::")[-1] not in named]
    if unnamed:
        terminalreporter.write_line(f"tests over {SLOW_S:g} s that docs/development.md does not name:")
        for nodeid in unnamed:
            terminalreporter.write_line(f"  {nodeid}")
