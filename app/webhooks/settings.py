"""The service's configuration, from the environment; it refuses to start on anything missing or broken.

- ``GITHUB_APP_ID`` (or ``GITHUB_APP_CLIENT_ID``): which app this is.
- ``GITHUB_APP_PRIVATE_KEY`` (PEM text) or ``GITHUB_APP_PRIVATE_KEY_PATH``: signs the app's JWTs.
- ``GITHUB_WEBHOOK_SECRET``: verifies ``X-Hub-Signature-256`` on every delivery.
- ``GITHUB_API_URL``: ``https://api.github.com`` by default; a GitHub Enterprise Server URL, or a test double.
- ``INTERLOCK_LOG_LEVEL``: ``info`` by default.
- ``GITHUB_APP_SLUG`` (optional): the app's slug, so that events its own bot caused are ignored.
- the web board's OAuth client and session secret (optional): ``app/webhooks/board_settings.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from app.engine.errors import InterlockError
from app.github.client import AppIdentity
from app.inputfile import InputUnreadable, read_input_text
from app.webhooks.board_settings import BoardSettings, board_settings

DEFAULT_API_URL = "https://api.github.com"
KEY_LIMIT = 64 * 1024  # an RSA key of 4096 bits is about 3 kB of PEM
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


class SettingsError(InterlockError):
    """The service cannot start: ``problems`` says every reason, with the variable to set."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("the service cannot start:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class ServiceSettings:
    app_id: str
    private_key: str
    webhook_secret: bytes
    api_url: str = DEFAULT_API_URL
    log_level: str = "info"
    app_slug: str | None = None
    board: BoardSettings | None = None  # the web board; None: off (app/webhooks/board_settings.py)

    def app_identity(self) -> AppIdentity:
        """The plain values the GitHub adapter takes."""
        secret = self.webhook_secret.decode("utf-8", errors="replace")
        return AppIdentity(
            self.app_id, self.private_key, self.api_url, secrets=(secret,) if secret else (), slug=self.app_slug
        )

    def __repr__(self) -> str:  # never print secrets
        return f"ServiceSettings(app_id={self.app_id!r}, api_url={self.api_url!r}, log_level={self.log_level!r})"


def settings_from_env(env: Mapping[str, str] | None = None) -> ServiceSettings:
    env = os.environ if env is None else env
    problems: list[str] = []
    app_id = env.get("GITHUB_APP_ID") or env.get("GITHUB_APP_CLIENT_ID") or ""
    if not app_id:
        problems.append("GITHUB_APP_ID (or GITHUB_APP_CLIENT_ID) is not set: the app's id from its settings page")
    key = _private_key(env, problems)
    secret = env.get("GITHUB_WEBHOOK_SECRET", "")
    if not secret:
        problems.append("GITHUB_WEBHOOK_SECRET is not set: the secret entered in the app's webhook settings")
    level = env.get("INTERLOCK_LOG_LEVEL", "info").lower()
    if level not in LOG_LEVELS:
        problems.append(f"INTERLOCK_LOG_LEVEL={level!r} is not one of {', '.join(LOG_LEVELS)}")
    api_url = env.get("GITHUB_API_URL", DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("http://", "https://")):
        problems.append(f"GITHUB_API_URL={api_url!r} is not an http(s) URL")
    board = board_settings(env, problems)
    if problems:
        raise SettingsError(problems)
    slug = env.get("GITHUB_APP_SLUG") or None
    return ServiceSettings(app_id, key, secret.encode("utf-8"), api_url, level, slug, board)


def _private_key(env: Mapping[str, str], problems: list[str]) -> str:
    text = env.get("GITHUB_APP_PRIVATE_KEY", "")
    path = env.get("GITHUB_APP_PRIVATE_KEY_PATH", "")
    if not text and path:
        try:
            text = read_input_text(Path(path), KEY_LIMIT)
        except InputUnreadable as exc:  # missing, a FIFO or a device, too large, not UTF-8
            problems.append(f"GITHUB_APP_PRIVATE_KEY_PATH={path!r} cannot be read: {exc.reason}")
            return ""
    if not text:
        problems.append("GITHUB_APP_PRIVATE_KEY (PEM text) or GITHUB_APP_PRIVATE_KEY_PATH is not set")
        return ""
    text = text.replace("\\n", "\n")  # keys passed through one-line environment variables
    # here, not at the top: App-less mode reads this module's constants in a core install, without the service
    # extra that brings cryptography (app/cli_extras.py)
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(text.encode("utf-8"), password=None)
    except (ValueError, TypeError) as exc:
        problems.append(f"the app's private key does not parse as an unencrypted PEM key ({exc})")
    return text
