"""Links go to the GitHub the App talks to (issue 28, part 5): github.com, or a GitHub Enterprise Server's host."""

from __future__ import annotations

from dataclasses import replace

from app.github.client import GitHubApp
from app.github.web import web_url
from app.webhooks.settings import ServiceSettings


def test_the_web_host_is_the_api_urls() -> None:
    assert web_url("https://api.github.com") == web_url("https://api.github.com/") == "https://github.com"
    assert web_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com"


def test_an_installation_on_an_enterprise_server_links_there(settings: ServiceSettings) -> None:
    identity = replace(settings, api_url="https://ghe.example.com/api/v3").app_identity()
    assert GitHubApp(identity).installation(42).web == "https://ghe.example.com"
    assert GitHubApp(replace(settings, api_url="https://api.github.com").app_identity()).installation(42).web == (
        "https://github.com"
    )


def test_the_readme_says_where_links_point() -> None:
    from tests.helpers import doc

    text = " ".join(doc("operating/service.md").split())
    assert "are on the web host of `GITHUB_API_URL`: `https://github.com` for `https://api.github.com`, and " in text
