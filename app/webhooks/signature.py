"""Webhook signatures: HMAC-SHA256 of the raw body, compared in constant time, before any parsing.

The header is compared as bytes: ``hmac.compare_digest`` raises ``TypeError`` on a str that is not ASCII,
and a header is whatever the sender chose, so a forged non-ASCII header must be a 401, never a 500.
https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: bytes, body: bytes) -> str:
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def signature_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """True only for a ``sha256=<hex>`` header that matches; a missing, other-scheme or malformed header is
    invalid."""
    if not header or not header.startswith(PREFIX):
        return False
    given = header.strip().encode("utf-8", errors="surrogateescape")
    return hmac.compare_digest(sign(secret, body).encode("ascii"), given)
