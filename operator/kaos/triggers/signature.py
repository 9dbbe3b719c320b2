"""Webhook signatures: ``X-KAOS-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>``."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-KAOS-Signature-256"
PREFIX = "sha256="


def signature(secret: bytes, body: bytes) -> str:
    """The header value a sender puts on ``body``."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` signs ``body`` with ``secret``, compared in constant time (hex in any case)."""
    if not header or not secret:
        return False
    given = header.strip()
    if given[: len(PREFIX)].lower() != PREFIX:
        return False
    expected = signature(secret, body).encode()
    return hmac.compare_digest(PREFIX.encode() + given[len(PREFIX):].lower().encode("utf-8", "replace"), expected)
