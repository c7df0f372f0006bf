"""The web address that goes with an API address (issue 28, part 5): the links Interlock writes — a job's log, an
issue, a pull request — point at the GitHub the App talks to, github.com or a GitHub Enterprise Server, whose
API lives at ``https://HOST/api/v3`` (https://docs.github.com/en/enterprise-server@latest/rest/quickstart)."""

from __future__ import annotations

GITHUB_COM = "https://github.com"


def web_url(api_url: str) -> str:
    """``https://github.com`` for ``https://api.github.com``; ``https://HOST`` for ``https://HOST/api/v3``."""
    api_url = api_url.rstrip("/")
    if api_url == "https://api.github.com":
        return GITHUB_COM
    return api_url.removesuffix("/api/v3")
