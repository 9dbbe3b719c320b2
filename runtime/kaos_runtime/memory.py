"""Bounded in-memory event store: sessions of events, oldest evicted first."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections import OrderedDict, deque
from datetime import datetime, timezone
from typing import Any

from .settings import MemorySettings

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
)


_PROCESS_PREFIX = uuid.uuid4().hex[:12]
_event_numbers = itertools.count(1)


def new_session_id() -> str:
    return "session-" + uuid.uuid4().hex[:16]


def new_event_id() -> str:
    """Unique across processes (random prefix) without a random draw per event."""
    return f"{_PROCESS_PREFIX}-{next(_event_numbers)}"


class Memory:
    """Events per session. At most `max_sessions` sessions (the least recently active one is
    dropped first) and `max_session_events` events per session (its oldest dropped first).
    A lock guards every change so concurrent requests never interleave partial updates."""

    def __init__(self, config: MemorySettings) -> None:
        self.config = config
        self._sessions: OrderedDict[str, deque] = OrderedDict()
        self._sequence = itertools.count()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def record(self, session_id: str, event_type: str, content: Any, metadata: dict | None = None) -> None:
        if not self.config.enabled:
            return
        event = {
            "event_id": new_event_id(),
            "timestamp": datetime.now(timezone.utc).isoformat(),
            "event_type": event_type,
            "content": content,
            "metadata": {"session_id": session_id, **(metadata or {})},
        }
        with self._lock:
            events = self._sessions.get(session_id)
            if events is None:
                events = deque(maxlen=self.config.max_session_events)
                self._sessions[session_id] = events
                while len(self._sessions) > self.config.max_sessions:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(session_id)
            events.append((next(self._sequence), event))

    def events(self, limit: int | None = None, session_id: str | None = None,
               event_type: str | None = None) -> tuple[list[dict], int]:
        """The newest `limit` matching events (oldest first) and how many match in total."""
        with self._lock:
            if session_id is not None:
                pools = [self._sessions.get(session_id, ())]
            else:
                pools = list(self._sessions.values())
            matching = [item for pool in pools for item in pool
                        if event_type is None or item[1]["event_type"] == event_type]
        matching.sort(key=lambda item: item[0])
        total = len(matching)
        if limit is not None:
            matching = matching[-limit:] if limit > 0 else []
        return [event for _, event in matching], total

    def sessions(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    def history(self, session_id: str, limit: int) -> list[dict]:
        """The last `limit` conversation turns of a session as chat messages."""
        if limit <= 0:
            return []
        with self._lock:
            events = list(self._sessions.get(session_id, ()))
        turns = []
        for _, event in events:
            if event["event_type"] in ("user_message", "task_delegation_received"):
                turns.append({"role": "user", "content": str(event["content"])})
            elif event["event_type"] == "agent_response":
                turns.append({"role": "assistant", "content": str(event["content"])})
        return turns[-limit:]
