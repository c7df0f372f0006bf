"""The App's OAuth client: "Sign in with GitHub" for the web board, with plain values (no shell's settings).

The web flow: the browser goes to ``<web>/login/oauth/authorize``, GitHub sends it back with a ``code``, the
service exchanges the code for a user-to-server token at ``<web>/login/oauth/access_token``, and reads with it
who the person is (``GET /user``) and which repositories they can access through the App
(``GET /user/installations``, then ``GET /user/installations/{id}/repositories``): GitHub answers with the
intersection of what the App is installed on and what the person can see. The token is not kept.
https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx

from app.engine.errors import InterlockError

TIMEOUT_S = 10.0
PAGES = 10  # pages of 100 read of each list: 1,000 installations, 1,000 repositories per installation


class OAuthError(InterlockError):
    """The sign-in could not be completed; the message says why (never the code, the secret or a token)."""


def authorize_url(web_url: str, client_id: str, redirect_uri: str, state: str) -> str:
    query = urlencode({"client_id": client_id, "redirect_uri": redirect_uri, "state": state})
    return f"{web_url}/login/oauth/authorize?{query}"


def exchange_code(
    web_url: str,
    client_id: str,
    client_secret: str,
    code: str,
    redirect_uri: str,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """The user-to-server token for ``code``; GitHub answers 200 with an ``error`` for a bad or used code."""
    form = {"client_id": client_id, "client_secret": client_secret, "code": code, "redirect_uri": redirect_uri}
    with httpx.Client(transport=transport, timeout=TIMEOUT_S) as client:
        try:
            response = client.post(
                f"{web_url}/login/oauth/access_token", data=form, headers={"accept": "application/json"}
            )
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OAuthError(f"GitHub's token exchange failed ({type(exc).__name__})") from None
    token = data.get("access_token") if isinstance(data, dict) else None
    if response.status_code != 200 or not isinstance(token, str) or not token:
        error = data.get("error_description") or data.get("error") if isinstance(data, dict) else None
        raise OAuthError(f"GitHub refused the sign-in code: {error or response.status_code}")
    return token


def person_and_repositories(
    api_url: str, token: str, transport: httpx.BaseTransport | None = None
) -> tuple[str, dict[int, list[str]]]:
    """The person's login, and the repositories they can access through the App, by installation id."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/vnd.github+json"}
    with httpx.Client(base_url=api_url, transport=transport, timeout=TIMEOUT_S, headers=headers) as client:
        user = _get(client, "/user")
        login = user.get("login") if isinstance(user, dict) else None
        if not isinstance(login, str) or not login:
            raise OAuthError("GitHub did not say who signed in")
        repos: dict[int, list[str]] = {}
        for installation in _pages(client, "/user/installations", "installations"):
            inst = installation.get("id")
            if isinstance(inst, int) and not isinstance(inst, bool):
                found = _pages(client, f"/user/installations/{inst}/repositories", "repositories")
                repos[inst] = sorted(str(r["full_name"]) for r in found if isinstance(r.get("full_name"), str))
        return login, repos


def _get(client: httpx.Client, url: str, params: dict[str, Any] | None = None) -> Any:
    try:
        response = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise OAuthError(f"GitHub could not be reached for GET {url} ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise OAuthError(f"GitHub answered {response.status_code} to GET {url}")
    try:
        return response.json()
    except ValueError:
        raise OAuthError(f"GitHub's answer to GET {url} is not JSON") from None


def _pages(client: httpx.Client, url: str, key: str) -> list[dict[str, Any]]:
    """Every item of a paged list whose answer holds it under ``key``, up to ``PAGES`` pages of 100."""
    found: list[dict[str, Any]] = []
    for page in range(1, PAGES + 1):
        data = _get(client, url, {"per_page": 100, "page": page})
        batch = data.get(key, []) if isinstance(data, dict) else []
        found += [item for item in batch if isinstance(item, dict)]
        if len(batch) < 100:
            break
    return found
