"""Webhook signatures: HMAC-SHA256 of the raw body, compared in constant time, before any parsing.

https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: bytes, body: bytes) -> str:
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def signature_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """True only for a ``sha256=<hex>`` header that matches; a missing or other-scheme header is invalid."""
    if not header or not header.startswith(PREFIX):
        return False
    return hmac.compare_digest(sign(secret, body), header.strip())
