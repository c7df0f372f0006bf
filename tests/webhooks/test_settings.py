"""The service refuses to start, with a clear message, when its configuration is missing or broken."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.webhooks.settings import SettingsError, settings_from_env
from tests.helpers import ROOT
from tests.webhooks.conftest import pem_key

KEY = pem_key()


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(SettingsError) as caught:
        settings_from_env({"INTERLOCK_LOG_LEVEL": "loud", "GITHUB_API_URL": "ftp://x"})
    text = str(caught.value)
    for name in (
        "GITHUB_APP_ID",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
        "INTERLOCK_LOG_LEVEL",
        "GITHUB_API_URL",
    ):
        assert name in text


def test_a_key_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not parse"):
        settings_from_env({"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_PRIVATE_KEY": "not a key"})
    with pytest.raises(SettingsError, match="cannot be read"):
        settings_from_env(
            {
                "GITHUB_APP_ID": "1",
                "GITHUB_WEBHOOK_SECRET": "s",
                "GITHUB_APP_PRIVATE_KEY_PATH": str(tmp_path / "missing.pem"),
            }
        )


def test_key_from_a_file_or_a_one_line_variable(tmp_path: Path) -> None:
    path = tmp_path / "app.pem"
    path.write_text(KEY)
    from_file = settings_from_env(
        {
            "GITHUB_APP_CLIENT_ID": "Iv1.abc",
            "GITHUB_WEBHOOK_SECRET": "s",
            "GITHUB_APP_PRIVATE_KEY_PATH": str(path),
            "GITHUB_API_URL": "https://ghe.example/api/v3/",
        }
    )
    assert from_file.app_id == "Iv1.abc" and from_file.api_url == "https://ghe.example/api/v3"
    one_line = settings_from_env(
        {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_PRIVATE_KEY": KEY.replace("\n", "\\n")}
    )
    assert one_line.private_key == KEY
    assert "PRIVATE" not in repr(one_line) and "webhook_secret" not in repr(one_line)  # secrets never printed


def test_serve_refuses_to_start_without_configuration() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INTERLOCK_"))}
    result = subprocess.run(
        [sys.executable, "-m", "app", "serve"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert result.returncode == 2 and "the service cannot start" in result.stderr
    assert "GITHUB_WEBHOOK_SECRET is not set" in result.stderr and "Traceback" not in result.stderr


BASE = {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_PRIVATE_KEY": KEY}


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("INTERLOCK_WORKERS", "0", "INTERLOCK_WORKERS=0 is not between 1 and 64"),
        ("INTERLOCK_WORKERS", "four", "INTERLOCK_WORKERS='four' is not a whole number"),
        ("INTERLOCK_DELIVERY_ATTEMPTS", "101", "INTERLOCK_DELIVERY_ATTEMPTS=101 is not between 1 and 100"),
        ("INTERLOCK_VISIBILITY_S", "nan", "INTERLOCK_VISIBILITY_S=nan is not between 1 and 86400 seconds"),
        ("INTERLOCK_VISIBILITY_S", "soon", "INTERLOCK_VISIBILITY_S='soon' is not a number of seconds"),
        ("INTERLOCK_REPLICAS", "0", "INTERLOCK_REPLICAS=0 is not between 1 and 64"),
        ("INTERLOCK_REDIS_URL", "http://:hunter2@cache:6379", "INTERLOCK_REDIS_URL (http://…) is not a redis://"),
    ],
)
def test_each_queue_and_fleet_setting_is_checked_naming_its_variable(name: str, value: str, says: str) -> None:
    # SPEC GH8: a setting that would make the queue or the shared quota misbehave stops the start, named
    with pytest.raises(SettingsError) as caught:
        settings_from_env({**BASE, name: value})
    assert says in str(caught.value)
    assert "hunter2" not in str(caught.value)  # a URL's password is never printed


def test_fleet_settings_are_read() -> None:
    settings = settings_from_env({**BASE, "INTERLOCK_REDIS_URL": "redis://cache:6379/0", "INTERLOCK_REPLICAS": "2"})
    assert (settings.redis_url, settings.replicas) == ("redis://cache:6379/0", 2)
    assert (settings_from_env(BASE).redis_url, settings_from_env(BASE).replicas) == (None, 1)


def test_the_webhook_secret_from_a_file(tmp_path: Path) -> None:
    # a container's secret is a mounted file (compose.yaml); its trailing newline is not part of the secret
    path = tmp_path / "webhook_secret"
    path.write_text("sekrit\n")
    env = {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET_PATH": str(path)}
    assert settings_from_env(env).webhook_secret == b"sekrit"
    with pytest.raises(SettingsError, match=r"GITHUB_WEBHOOK_SECRET_PATH='.*missing' cannot be read"):
        settings_from_env({**env, "GITHUB_WEBHOOK_SECRET_PATH": str(tmp_path / "missing")})
