"""The signed on-behalf-of assertion that carries a person and their groups across a hop (pure;
docs/security.md, "How identity travels").

``X-KAOS-On-Behalf-Of: <principal>;g=<group:a,group:b>;t=<unix seconds>;sig=<hex>``: ``sig`` is
HMAC-SHA256, keyed with the bearer credential the request authenticates with, over every other
field and the name of the receiver (the peer agent, or the MCP server):
``kaos-on-behalf/2\\n<principal>\\n<groups>\\n<t>\\n<receiver>``. A receiver trusts it only from
a request that very credential authenticated, signed for its own name, within
``WINDOW_SECONDS`` of ``t``; a header that fails any check is ignored, never trusted
in part. The groups are those the sender knew for the person (their token's, or those an
assertion it verified carried), so a peer's ``group:`` grants apply to a relayed user.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from .principal import parse

HEADER = "X-KAOS-On-Behalf-Of"
WINDOW_SECONDS = 60  # how far from the receiver's clock a signature's time may be
MAX_GROUPS_CHARS = 4096  # longer group lists are refused (a header stays small)
_VERSION = "kaos-on-behalf/2"


@dataclass(frozen=True)
class Assertion:
    """What a verified header says: the person (a principal's text) and their groups."""

    person: str
    groups: frozenset[str] = frozenset()


def _groups_text(groups) -> str:
    return ",".join(sorted(groups))


def _groups_of(text: str) -> frozenset[str] | None:
    if not text:
        return frozenset()
    if len(text) > MAX_GROUPS_CHARS:
        return None
    parts = text.split(",")
    if not all(part.startswith("group:") and len(part) > 6 and parse(part) is not None for part in parts):
        return None
    return frozenset(parts)


def _signature(person: str, groups: str, at: int, receiver: str, credential: str) -> str:
    message = f"{_VERSION}\n{person}\n{groups}\n{at}\n{receiver}".encode()
    return hmac.new(credential.encode(), message, hashlib.sha256).hexdigest()


def sign(person: str, groups, credential: str, receiver: str, now: float) -> str:
    """The header's value for a request to ``receiver`` that authenticates with ``credential``."""
    at, listed = int(now), _groups_text(groups)
    return f"{person};g={listed};t={at};sig={_signature(person, listed, at, receiver, credential)}"


def verify(value: str, credential: str, receiver: str, now: float) -> Assertion | None:
    """The person and groups a header's value names, when it is signed with ``credential`` for
    ``receiver`` and recent; None otherwise."""
    person, _, rest = value.strip().partition(";g=")
    listed, _, rest = rest.partition(";t=")
    at, _, signature = rest.partition(";sig=")
    if not (credential and at.isascii() and at.isdigit() and len(at) <= 12 and parse(person) is not None):
        return None
    groups = _groups_of(listed)
    if groups is None or abs(now - int(at)) > WINDOW_SECONDS:
        return None
    if not hmac.compare_digest(signature.encode(), _signature(person, listed, int(at), receiver, credential).encode()):
        return None
    return Assertion(person, groups)
