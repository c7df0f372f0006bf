"""The web board's settings (``GET /board``), from the environment: off unless the App's OAuth client is set.

- ``INTERLOCK_OAUTH_CLIENT_ID`` and ``INTERLOCK_OAUTH_CLIENT_SECRET``: the App's own OAuth client ("Client ID"
  and a client secret generated on the App's settings page). Neither set: the board is off and every ``/board``
  route answers 404 — never an open board. One without the other is refused at start.
- ``INTERLOCK_SESSION_SECRET`` (32 characters or more): signs the session cookie, the sign-in ``state`` and the
  CSRF tokens. Changing it signs everyone out.
- ``INTERLOCK_SERVICE_URL``: the service's public URL as browsers reach it, without a path (the board's cookies
  and redirects name ``/board``); the callback is ``<service>/board/callback``, and the cookie is ``Secure`` when
  it is ``https``.
- ``INTERLOCK_BOARD_CACHE_S``: how many seconds the board keeps a repository's runs before reading them again
  (10 by default; 0 reads them at every page), trading the installation's API quota for freshness.
- ``GITHUB_WEB_URL``: ``https://github.com`` by default (a GitHub Enterprise Server URL, or a test double): where
  ``/login/oauth/authorize`` and ``/login/oauth/access_token`` live.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_WEB_URL = "https://github.com"
DEFAULT_CACHE_S = 10.0
CACHE_MAX_S = 3600.0
SECRET_MIN = 32  # characters of the session secret: an HMAC key worth the name


@dataclass(frozen=True)
class BoardSettings:
    client_id: str
    client_secret: str
    session_secret: bytes
    service_url: str
    web_url: str = DEFAULT_WEB_URL
    cache_s: float = DEFAULT_CACHE_S

    @property
    def callback_url(self) -> str:
        return f"{self.service_url}/board/callback"

    @property
    def secure(self) -> bool:
        """Whether the cookies carry ``Secure``: browsers then send them over https only."""
        return self.service_url.startswith("https://")

    def __repr__(self) -> str:  # never print secrets
        return f"BoardSettings(client_id={self.client_id!r}, service_url={self.service_url!r})"


def board_settings(env: Mapping[str, str], problems: list[str]) -> BoardSettings | None:
    """The board's settings, ``None`` when OAuth is not configured; each problem appended to ``problems``."""
    client_id = env.get("INTERLOCK_OAUTH_CLIENT_ID", "")
    client_secret = env.get("INTERLOCK_OAUTH_CLIENT_SECRET", "")
    if not client_id and not client_secret:
        return None
    if not client_id or not client_secret:
        problems.append("INTERLOCK_OAUTH_CLIENT_ID and INTERLOCK_OAUTH_CLIENT_SECRET are set together, or neither")
    secret = env.get("INTERLOCK_SESSION_SECRET", "")
    if len(secret) < SECRET_MIN:
        problems.append(f"INTERLOCK_SESSION_SECRET must be {SECRET_MIN} characters or more when the board is on")
    service_url = env.get("INTERLOCK_SERVICE_URL", "").rstrip("/")
    web_url = env.get("GITHUB_WEB_URL", DEFAULT_WEB_URL).rstrip("/")
    for name, url in (("INTERLOCK_SERVICE_URL", service_url), ("GITHUB_WEB_URL", web_url)):
        if not url.startswith(("http://", "https://")):
            problems.append(f"{name}={url!r} is not an http(s) URL (the board needs it)")
    if urlsplit(service_url).path or urlsplit(service_url).query:  # the cookies and redirects name /board
        problems.append(
            f"INTERLOCK_SERVICE_URL={service_url!r} has a path: the board lives at /board of the service's "
            "origin, so give only its scheme, host and port (a path prefix would refuse every sign-in)"
        )
    cache_s = _seconds(env.get("INTERLOCK_BOARD_CACHE_S", ""), problems)
    return BoardSettings(client_id, client_secret, secret.encode("utf-8"), service_url, web_url, cache_s)


def _seconds(text: str, problems: list[str]) -> float:
    if not text:
        return DEFAULT_CACHE_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= CACHE_MAX_S:  # NaN fails this too
        problems.append(f"INTERLOCK_BOARD_CACHE_S={text!r} is not a number of seconds from 0 to {CACHE_MAX_S:.0f}")
        return DEFAULT_CACHE_S
    return value
