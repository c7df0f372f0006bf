"""Fixtures for the webhook service: an app key made for the test, a secret, signed deliveries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.webhooks.settings import ServiceSettings
from app.webhooks.signature import sign
from tests.helpers import FIXTURES

# Real deliveries captured from GitHub (github.com/octokit/webhooks), one folder per event; see SOURCE.json.
EXAMPLES = FIXTURES / "github" / "webhooks" / "examples"
SECRET = b"It's a Secret to Everybody"


def pem_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.fixture(scope="session")
def settings() -> ServiceSettings:
    return ServiceSettings(app_id="12345", private_key=pem_key(), webhook_secret=SECRET, app_slug="interlock-app")


def signed(event: str, payload: Any, delivery: str = "d-1", secret: bytes = SECRET) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
    return body, {
        "x-github-event": event,
        "x-github-delivery": delivery,
        "x-hub-signature-256": sign(secret, body),
        "content-type": "application/json",
    }


def corpus_examples() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.json"))
