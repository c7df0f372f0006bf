"""Fixtures shared by tests/github and tests/webhooks."""

from tests.redis_server import redis_url

__all__ = ["redis_url"]
