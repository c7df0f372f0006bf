"""GitHub-layer fixtures: the webhook settings (an app key made for the test) shared with tests/webhooks."""

from tests.webhooks.conftest import settings  # noqa: F401
