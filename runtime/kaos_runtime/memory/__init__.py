"""Agent memory: sessions of events, bounded, behind one interface with two backends.

- ``local`` (``LocalMemory``, the default): in this process; gone when the process ends.
- ``redis`` (``RedisMemory``): in Redis, shared by every replica of the agent and kept across
  restarts (``MEMORY_BACKEND=redis``, ``REDIS_URL``).

Both give the same answers: events per session in the order they were recorded, at most
``MEMORY_MAX_SESSIONS`` sessions (the least recently active dropped first) and
``MEMORY_MAX_SESSION_EVENTS`` events per session (the oldest dropped first), ``events()``
returning the newest ``limit`` matching events (oldest first) with the total that match.
A backend that cannot be reached raises ``MemoryUnavailable`` (the HTTP layer answers 503).

Each session has an owner (the principal that started it, core/principal.py) once ``claim``
records one, atomically: of two callers claiming one new id, one owns it. A session with events
and no owner (recorded while authentication was off) belongs to ``anonymous``. ``events`` and
``sessions`` take an ``owner`` to see only that owner's sessions; the owners are kept and dropped
with their sessions. Ownership is tracked only with authentication on (service/sessions.py).

``context_events`` gives what the model's context is built from (the turns and the
``context_compacted`` summaries, kaos_runtime/context/); ``lock`` and ``unlock`` hold a named lock
on a session, with an expiry, across the agent's replicas on Redis (compaction runs under one).
"""

from __future__ import annotations

import itertools
import uuid
from abc import ABC, abstractmethod
from datetime import datetime, timezone
from typing import Any

from ..core.principal import ANONYMOUS
from ..core.settings import MemorySettings

EVENT_TYPES = (
    "user_message",
    "task_delegation_received",
    "tool_call",
    "tool_result",
    "delegation_request",
    "delegation_response",
    "delegation_error",
    "agent_response",
    "error",
    "approval_requested",
    "approval_granted",
    "approval_rejected",
    "approval_expired",
    # A summary of older turns (context/compaction.py): metadata.replaces lists the event ids it stands for.
    "context_compacted",
    "memory_recalled",
    "memory_stored",
)
# The events that make up the conversation given back to the model for a continued session.
TURN_ROLES = {"user_message": "user", "task_delegation_received": "user", "agent_response": "assistant"}
COMPACTED = "context_compacted"
# The events the model's context is built from (context_events).
CONTEXT_EVENTS = (*TURN_ROLES, COMPACTED)

_PROCESS_PREFIX = uuid.uuid4().hex[:12]
_event_numbers = itertools.count(1)


def new_session_id() -> str:
    return "session-" + uuid.uuid4().hex[:16]


def new_event_id() -> str:
    """Unique across processes (random prefix) without a random draw per event."""
    return f"{_PROCESS_PREFIX}-{next(_event_numbers)}"


def make_event(session_id: str, event_type: str, content: Any, metadata: dict | None = None) -> dict:
    return {
        "event_id": new_event_id(),
        "timestamp": datetime.now(timezone.utc).isoformat(),
        "event_type": event_type,
        "content": content,
        "metadata": {"session_id": session_id, **(metadata or {})},
    }


class MemoryUnavailable(Exception):
    """The memory backend cannot be reached; the message says which and why (no secrets)."""


class Memory(ABC):
    """The interface of every backend. ``MEMORY_ENABLED=false`` makes each one record nothing."""

    backend = ""

    def __init__(self, config: MemorySettings) -> None:
        self.config = config

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    async def record(self, session_id: str, event_type: str, content: Any, metadata: dict | None = None) -> None:
        if self.config.enabled:
            await self._record(session_id, make_event(session_id, event_type, content, metadata))

    async def events(self, limit: int | None = None, session_id: str | None = None,
                     event_type: str | None = None, owner: str | None = None) -> tuple[list[dict], int]:
        """The newest ``limit`` matching events (oldest first) and how many match in total; with
        ``owner``, of that owner's sessions only."""
        if not self.config.enabled:
            return [], 0
        if limit is not None and limit <= 0:
            return [], (await self._events(0, session_id, event_type, owner))[1]
        return await self._events(limit, session_id, event_type, owner)

    async def sessions(self, owner: str | None = None) -> list[str]:
        """Session ids, least recently active first; with ``owner``, that owner's only."""
        return await self._sessions(owner) if self.config.enabled else []

    async def claim(self, session_id: str, owner: str) -> str:
        """The session's owner: ``owner``, recorded now, if the session is new; else the one it has.
        With memory off nothing is kept (no session can be read or continued): ``owner``."""
        return await self._claim(session_id, owner) if self.config.enabled else owner

    async def owner(self, session_id: str) -> str | None:
        """The session's owner; None when there is no such session."""
        return await self._owner(session_id) if self.config.enabled else None

    async def context_events(self, session_id: str) -> list[dict]:
        """The session's turn events and ``context_compacted`` summaries, oldest first."""
        if not self.config.enabled:
            return []
        return await self._context_events(session_id)

    async def lock(self, session_id: str, name: str, seconds: float) -> str | None:
        """Take the lock ``name`` of a session for at most ``seconds``: a token to unlock it
        with, or None when someone holds it."""
        token = uuid.uuid4().hex
        return token if await self._lock(session_id, name, token, seconds) else None

    async def unlock(self, session_id: str, name: str, token: str) -> None:
        """Give the lock back (only if ``token`` still holds it: it may have expired meanwhile)."""
        await self._unlock(session_id, name, token)

    async def flush(self) -> None:
        """Wait until every event recorded so far is stored (the local backend stores at once)."""

    async def check(self) -> None:
        """Raise MemoryUnavailable when the memory cannot be reached (before a response starts
        that could no longer say so, a stream); the local backend always can."""

    async def close(self) -> None:
        """Release connections (the local backend holds none)."""

    @abstractmethod
    async def _record(self, session_id: str, event: dict) -> None: ...

    @abstractmethod
    async def _events(self, limit: int | None, session_id: str | None,
                      event_type: str | None, owner: str | None) -> tuple[list[dict], int]: ...

    @abstractmethod
    async def _sessions(self, owner: str | None) -> list[str]: ...

    @abstractmethod
    async def _claim(self, session_id: str, owner: str) -> str: ...

    @abstractmethod
    async def _owner(self, session_id: str) -> str | None: ...

    @abstractmethod
    async def _context_events(self, session_id: str) -> list[dict]: ...

    @abstractmethod
    async def _lock(self, session_id: str, name: str, token: str, seconds: float) -> bool: ...

    @abstractmethod
    async def _unlock(self, session_id: str, name: str, token: str) -> None: ...


def create_memory(config: MemorySettings, agent_name: str) -> Memory:
    """The backend ``MEMORY_BACKEND`` names (redis is imported only when asked for)."""
    if config.backend == "redis":
        from .redis_store import RedisMemory

        return RedisMemory(config, agent_name)
    from .local import LocalMemory

    return LocalMemory(config)


__all__ = ["ANONYMOUS", "COMPACTED", "CONTEXT_EVENTS", "EVENT_TYPES", "Memory", "MemoryUnavailable", "create_memory", "make_event", "new_event_id",
           "new_session_id"]
