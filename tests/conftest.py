"""Fixtures shared by every test: a real redis-server (tests/redis_server.py), and githubkit's retries at once."""

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from tests.redis_server import redis_url

__all__ = ["redis_url"]


@pytest.fixture(autouse=True)
def githubkit_retries_at_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """githubkit waits 1, 4 and 9 s before its three retries of a 5xx answer: in this process a test's client
    retries at once (14 s a test otherwise; tests/github/test_flows.py's ``retry_waits`` records the waits where a
    test reads them). A real service in a subprocess still waits, as in production."""
    import githubkit.core

    monkeypatch.setattr(githubkit.core, "time", SimpleNamespace(sleep=lambda _seconds: None))
    yield
