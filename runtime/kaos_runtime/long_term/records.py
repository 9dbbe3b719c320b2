"""What a long-term memory is, whose it is, and where it is kept (pure functions)."""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field

SCOPES = ("user", "agent", "namespace")
NAMESPACE_OWNER = "namespace"  # the one owner of every memory of a store with scope namespace
MAX_MEMORY_CHARS = 2000  # a memory longer than this is cut (a fact, not a document)
MAX_TABLE_CHARS = 48  # PostgreSQL names are at most 63 bytes; room for the index suffixes
_ID = re.compile(r"^mem-[0-9a-f]{32}$")
MEMORY_ID_PATTERN = _ID.pattern  # for the OpenAPI document


@dataclass(frozen=True)
class Record:
    """One memory: its text, whose it is, where it came from (the session, ``extraction`` or
    ``tool``) and when (unix seconds)."""

    id: str
    owner: str
    text: str
    created_at: float
    session_id: str = ""
    source: str = ""

    def public(self) -> dict:
        return {"id": self.id, "text": self.text, "created_at": self.created_at, "session_id": self.session_id,
                "source": self.source}


@dataclass(frozen=True)
class Hit:
    """A memory found by a search and its cosine distance to the query (0: the same direction)."""

    record: Record
    distance: float

    def public(self) -> dict:
        return {**self.record.public(), "distance": round(self.distance, 6)}


@dataclass(frozen=True)
class NewMemory:
    owner: str
    text: str
    vector: list[float]
    created_at: float
    session_id: str = ""
    source: str = ""
    id: str = field(default_factory=lambda: new_memory_id())


def new_memory_id() -> str:
    return "mem-" + uuid.uuid4().hex


def is_memory_id(value: str) -> bool:
    return bool(_ID.fullmatch(value))


def owner_of(scope: str, principal: str, agent: str) -> str:
    """Whose memories a turn reads and writes: with scope ``user`` the principal the request acts
    for (core/principal.py, its text); ``agent``: the agent's own, shared by all its callers;
    ``namespace``: one pool for every agent using the store."""
    if scope == "user":
        return principal
    if scope == "agent":
        return f"agent:{agent}"
    return NAMESPACE_OWNER


def table_name(collection: str) -> str:
    """A SQL identifier for a collection name (the MemoryStore's ``<namespace>-<name>``): lower
    case letters, digits and ``_``, and a hash of the name itself, so that two names that clean
    to the same text (``a-b``, ``a_b``) still get two tables."""
    cleaned = re.sub(r"[^a-z0-9_]", "_", collection.lower())[:MAX_TABLE_CHARS - 14]
    digest = hashlib.sha256(collection.encode()).hexdigest()[:8]
    return f"ltm_{cleaned}_{digest}"


def clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MEMORY_CHARS else text[:MAX_MEMORY_CHARS - 1] + "…"


def recalled_message(hits: list[Hit], max_chars: int = 2000) -> dict | None:
    """The system message that gives the model what it remembers of this caller: the most
    relevant first, at most ``max_chars`` of memories; None when there is nothing."""
    lines, used = [], 0
    for hit in hits:
        line = f"- {hit.record.text}"
        if used + len(line) > max_chars:
            break
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return None
    return {"role": "system",
            "content": "Long-term memory: what you remember from earlier conversations with this user "
                       "(most relevant first; use it when it helps, never mention this list):\n" + "\n".join(lines)}
