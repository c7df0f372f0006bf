"""compose.yaml and the Dockerfile against the settings the service reads (issue 27, SPEC GH8).

Docker is not on this machine, so the files are checked for what can drift silently: a variable the service does
not read (a setting that does nothing), a secret mounted where the settings do not look, a replica count the
quota share does not know, a data folder the service user cannot write."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.webhooks.service import MAX_BODY
from app.webhooks.settings import REDIS_SCHEMES, settings_from_env
from tests.helpers import doc

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_SOURCES = ("app/webhooks/settings.py", "app/webhooks/board/settings.py")


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _service_env() -> dict[str, str]:
    return {name: str(value) for name, value in _compose()["services"]["interlock"]["environment"].items()}


def _read_names() -> set[str]:
    text = "".join((ROOT / source).read_text(encoding="utf-8") for source in SETTINGS_SOURCES)
    return set(re.findall(r'"((?:GITHUB|INTERLOCK)_[A-Z0-9_]+)"', text))


def test_every_variable_compose_sets_is_one_the_service_reads() -> None:
    # SPEC GH8: every setting does something; a misspelt name would be ignored without a word
    unread = set(_service_env()) - _read_names()
    assert not unread, f"compose.yaml sets variables the service never reads: {sorted(unread)}"


def test_compose_builds_valid_settings_with_its_secrets_mounted(tmp_path: Path) -> None:
    # SPEC GH8: the files compose mounts at /run/secrets/<name> are where the settings read them
    compose = _compose()
    env = _service_env()
    mounted = set(compose["services"]["interlock"]["secrets"])
    assert mounted == set(compose["secrets"])
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    files = {"app_key": pem, "webhook_secret": b"s3cret-of-the-hook\n"}
    for name, value in env.items():
        if value.startswith("/run/secrets/"):
            secret = value.removeprefix("/run/secrets/")
            assert secret in mounted, f"{name} points at a secret compose does not mount: {secret}"
            (tmp_path / secret).write_bytes(files[secret])
            env[name] = str(tmp_path / secret)
    env["GITHUB_APP_ID"] = "123456"  # compose asks for it from the shell: ${GITHUB_APP_ID:?...}
    settings = settings_from_env(env)
    assert settings.webhook_secret == b"s3cret-of-the-hook"  # stripped of the newline a text editor adds
    assert settings.redis_url is not None and settings.redis_url.startswith(REDIS_SCHEMES)
    assert settings.data_dir == Path(compose["services"]["interlock"]["volumes"][0].split(":", 1)[1])


def test_the_replica_count_is_the_one_the_quota_share_uses() -> None:
    # SPEC GH8: with Redis unreachable each replica keeps to quota / INTERLOCK_REPLICAS; a count that differs from
    # the replicas compose starts would let the fleet send more than GitHub's 80 a minute
    service = _compose()["services"]["interlock"]
    assert int(_service_env()["INTERLOCK_REPLICAS"]) == service["deploy"]["replicas"] >= 2
    assert "redis" in service["depends_on"] and service["depends_on"]["redis"]["condition"] == "service_healthy"


def test_the_balancer_lets_through_what_the_service_accepts() -> None:
    nginx = _compose()["configs"]["nginx"]["content"]
    size = re.search(r"client_max_body_size (\d+)m;", nginx)
    assert size is not None and int(size.group(1)) * 1024 * 1024 >= MAX_BODY
    assert "proxy_next_upstream error timeout http_502 http_503" in nginx  # a replica restarting loses no delivery


@pytest.mark.parametrize("line", ["ENV INTERLOCK_DATA_DIR=/data", "VOLUME /data", "USER interlock"])
def test_the_image_has_a_data_folder_its_user_can_write(line: str) -> None:
    # SPEC GH8: the queue that makes a 202 durable lives in the data folder; a folder owned by root would make
    # every delivery fail to be queued
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert line in dockerfile.splitlines()
    assert "install -d -o interlock -g interlock -m 0700 /data" in dockerfile
    assert dockerfile.index("ENV INTERLOCK_DATA_DIR=/data") < dockerfile.index("USER interlock")
    volumes = _compose()["services"]["interlock"]["volumes"]
    assert any(volume.endswith(":/data") for volume in volumes)


def test_the_readme_says_how_to_start_the_fleet() -> None:
    # SPEC GH8: "Running the service" names the compose file, the two secret files it mounts, and the data folder
    text = doc("operating/scaling.md")
    section = " ".join(text.split("# Running the service", 1)[1].split())
    compose = _compose()
    replicas = compose["services"]["interlock"]["deploy"]["replicas"]
    assert f"`compose.yaml` starts such a fleet: {['', 'one', 'two', 'three'][replicas]} replicas" in section
    for secret in compose["secrets"].values():
        assert f"`{secret['file'].removeprefix('./')}`" in section
    assert "`GITHUB_APP_PRIVATE_KEY_PATH` and `GITHUB_WEBHOOK_SECRET_PATH`" in section
    assert "The image keeps its data folder in `/data` (`INTERLOCK_DATA_DIR`)" in section
    assert "appendonly" in " ".join(compose["services"]["redis"]["command"])
