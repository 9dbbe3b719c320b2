"""Webhook signatures. A call carries three headers:

    X-KAOS-Timestamp: <the time of signing, Unix seconds>
    X-KAOS-Delivery: <an id the sender picks for the call: 1-128 of A-Z a-z 0-9 _ ->
    X-KAOS-Signature-256: sha256=<hex HMAC-SHA256 of "<timestamp>.<delivery>.<raw body>">

The signature covers all three, so a captured call cannot be sent again under another delivery
id or at another time. Neither the timestamp (digits) nor the delivery id holds a ``.``: the
signed bytes split into the three parts one way only.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid

SIGNATURE_HEADER = "X-KAOS-Signature-256"
TIMESTAMP_HEADER = "X-KAOS-Timestamp"
DELIVERY_HEADER = "X-KAOS-Delivery"
PREFIX = "sha256="
TIMESTAMP = re.compile(r"[0-9]{1,12}")
DELIVERY_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# A call is accepted while its timestamp is at most this far from the receiver's clock, either side.
WINDOW_SECONDS = 300


def signed_bytes(timestamp: str, delivery: str, body: bytes) -> bytes:
    """What the signature covers: ``<timestamp>.<delivery>.<raw body>``."""
    return f"{timestamp}.{delivery}.".encode() + body


def signature(secret: bytes, timestamp: str, delivery: str, body: bytes) -> str:
    """The X-KAOS-Signature-256 value of a call."""
    return PREFIX + hmac.new(secret, signed_bytes(timestamp, delivery, body), hashlib.sha256).hexdigest()


def verify(secret: bytes, timestamp: str | None, delivery: str | None, body: bytes, header: str | None) -> bool:
    """Whether ``header`` signs this timestamp, delivery id and body with ``secret``, compared in
    constant time (the hex in any case). The timestamp's window is the caller's to check."""
    if not (header and secret and timestamp and delivery):
        return False
    if not (TIMESTAMP.fullmatch(timestamp) and DELIVERY_ID.fullmatch(delivery)):
        return False
    given = header.strip()
    if given[: len(PREFIX)].lower() != PREFIX:
        return False
    expected = signature(secret, timestamp, delivery, body).encode()
    return hmac.compare_digest(PREFIX.encode() + given[len(PREFIX):].lower().encode("utf-8", "replace"), expected)


def signed_headers(secret: bytes, body: bytes, *, delivery: str | None = None,
                   timestamp: int | None = None) -> dict[str, str]:
    """The three headers a sender puts on ``body`` (now, and a fresh delivery id unless given)."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    delivery = delivery or uuid.uuid4().hex
    return {TIMESTAMP_HEADER: stamp, DELIVERY_HEADER: delivery,
            SIGNATURE_HEADER: signature(secret, stamp, delivery, body)}
