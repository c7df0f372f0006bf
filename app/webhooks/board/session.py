"""The web board's session and its protections, signed with HMAC-SHA256 (standard library only).

Why no server-side store: any replica must know who is signed in, and nothing should be lost on a restart. The
cookie therefore carries only what the board needs — the person's login, the repositories they could see through
the App when they signed in (by installation), an expiry and a random session id — signed so it cannot be
forged or edited. The user-to-server token is used once, at sign-in, and never stored. The CSRF token of the
action forms is an HMAC of the session id: a page of another site cannot know it, and it changes at each sign-in.
The sign-in ``state`` is a random value kept in a signed, short-lived cookie of the same browser: a callback
whose ``state`` is not that browser's is refused, so nobody can sign a victim into their own account.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

SESSION_COOKIE = "interlock_board"
STATE_COOKIE = "interlock_board_signin"
SESSION_S = 8 * 3600  # a session lasts 8 hours; signing in again also refreshes the repositories shown
STATE_S = 600  # the sign-in must come back from GitHub within 10 minutes
COOKIE_LIMIT = 3800  # bytes of a cookie value browsers keep for sure (4096 with the name and attributes)


class SessionTooLarge(Exception):
    """More repositories than a cookie can name: the person is told, nothing is half-stored."""


@dataclass(frozen=True)
class Session:
    login: str
    repos: dict[int, list[str]]  # installation id -> the repositories (owner/name) visible to the person
    expires: float
    sid: str = field(default_factory=lambda: secrets.token_urlsafe(18))

    def installation_of(self, repo: str) -> int | None:
        """The installation through which the person sees ``repo``; ``None``: they do not see it."""
        return next((inst for inst, names in self.repos.items() if repo in names), None)

    def visible(self) -> list[tuple[int, str]]:
        return sorted((inst, name) for inst, names in self.repos.items() for name in names)


class Signer:
    """Signs and checks cookie values and CSRF tokens with one secret."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret

    def _mac(self, purpose: str, data: bytes) -> str:
        digest = hmac.new(self.secret, purpose.encode() + b"\0" + data, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def seal(self, purpose: str, value: dict[str, Any]) -> str:
        body = base64.urlsafe_b64encode(zlib.compress(json.dumps(value, separators=(",", ":")).encode())).decode()
        return f"{body}.{self._mac(purpose, body.encode())}"

    def open(self, purpose: str, sealed: str | None) -> dict[str, Any] | None:
        """The value ``seal`` signed for ``purpose``; ``None`` for anything else (absent, edited, another purpose)."""
        body, _, mac = (sealed or "").partition(".")
        if not body or not hmac.compare_digest(mac.encode(), self._mac(purpose, body.encode()).encode()):
            return None
        try:
            value = json.loads(zlib.decompress(base64.urlsafe_b64decode(body.encode()), bufsize=64 * 1024))
        except (ValueError, zlib.error, binascii.Error):
            return None
        return value if isinstance(value, dict) else None

    def session_cookie(self, session: Session) -> str:
        value = {"login": session.login, "repos": session.repos, "exp": session.expires, "sid": session.sid}
        sealed = self.seal("session", value)
        if len(sealed) > COOKIE_LIMIT:
            raise SessionTooLarge(f"{sum(len(names) for names in session.repos.values())} repositories")
        return sealed

    def session(self, cookie: str | None, now: float | None = None) -> Session | None:
        """The signed-in person, or ``None``: no cookie, a forged or edited one, or one that expired."""
        value = self.open("session", cookie)
        if value is None or float(value.get("exp", 0)) <= (now or time.time()):
            return None
        try:
            repos = {int(inst): [str(name) for name in names] for inst, names in dict(value["repos"]).items()}
            return Session(str(value["login"]), repos, float(value["exp"]), str(value["sid"]))
        except (KeyError, TypeError, ValueError):
            return None

    def csrf(self, session: Session) -> str:
        return self._mac("csrf", session.sid.encode())

    def csrf_valid(self, session: Session, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(str(token).encode(), self.csrf(session).encode())

    def state_cookie(self, state: str) -> str:
        return self.seal("state", {"state": state, "exp": time.time() + STATE_S})

    def state_valid(self, cookie: str | None, state: str | None) -> bool:
        """Whether ``state`` came back to the browser that started the sign-in, in time."""
        value = self.open("state", cookie)
        if value is None or not state or float(value.get("exp", 0)) <= time.time():
            return False
        return hmac.compare_digest(str(value.get("state", "")).encode(), state.encode())
