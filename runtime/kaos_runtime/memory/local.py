"""The ``local`` backend: events in this process, bounded, oldest evicted first."""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict, deque

from ..core.settings import MemorySettings
from . import ANONYMOUS, CONTEXT_EVENTS, Memory


class LocalMemory(Memory):
    """Events per session in an ordered dict of deques. At most ``max_sessions`` sessions (the
    least recently active one is dropped first) and ``max_session_events`` events per session
    (its oldest dropped first). Every method runs on the event loop without awaiting inside,
    so concurrent requests never interleave partial updates (a claim is atomic). A claimed
    session is a session, with no events yet; its owner goes when it does."""

    backend = "local"

    def __init__(self, config: MemorySettings) -> None:
        super().__init__(config)
        self._sessions_by_id: OrderedDict[str, deque] = OrderedDict()
        self._owners: dict[str, str] = {}
        self._sequence = itertools.count()
        self._locks: dict[tuple[str, str], tuple[str, float]] = {}  # (session, name) -> (token, expiry)

    def _session(self, session_id: str) -> deque:
        """The session's events, made the most recently active (created if new)."""
        events = self._sessions_by_id.get(session_id)
        if events is None:
            events = deque(maxlen=self.config.max_session_events)
            self._sessions_by_id[session_id] = events
            while len(self._sessions_by_id) > self.config.max_sessions:
                self._owners.pop(self._sessions_by_id.popitem(last=False)[0], None)
        else:
            self._sessions_by_id.move_to_end(session_id)
        return events

    async def _record(self, session_id: str, event: dict) -> None:
        self._session(session_id).append((next(self._sequence), event))

    async def _claim(self, session_id: str, owner: str) -> str:
        current = self._owner_of(session_id)
        if current is None:
            self._session(session_id)
            current = self._owners[session_id] = owner
        return current

    async def _owner(self, session_id: str) -> str | None:
        return self._owner_of(session_id)

    def _owner_of(self, session_id: str) -> str | None:
        if session_id not in self._sessions_by_id:
            return None
        return self._owners.get(session_id, ANONYMOUS)

    def _owned(self, owner: str | None) -> list[str]:
        return [session for session in self._sessions_by_id
                if owner is None or self._owners.get(session, ANONYMOUS) == owner]

    async def _events(self, limit, session_id, event_type, owner):
        if session_id is not None:
            pools = [self._sessions_by_id.get(session_id, ())]
        else:
            pools = [self._sessions_by_id[session] for session in self._owned(owner)]
        matching = [item for pool in pools for item in pool
                    if event_type is None or item[1]["event_type"] == event_type]
        if session_id is None:
            matching.sort(key=lambda item: item[0])
        total = len(matching)
        if limit is not None:
            matching = matching[-limit:] if limit > 0 else []
        return [event for _, event in matching], total

    async def _sessions(self, owner: str | None) -> list[str]:
        return self._owned(owner)


    async def _context_events(self, session_id: str) -> list[dict]:
        return [event for _, event in self._sessions_by_id.get(session_id, ()) if event["event_type"] in CONTEXT_EVENTS]

    async def _lock(self, session_id: str, name: str, token: str, seconds: float) -> bool:
        now = time.monotonic()
        for key in [key for key, (_, expiry) in self._locks.items() if expiry <= now]:
            del self._locks[key]
        if (session_id, name) in self._locks:
            return False
        self._locks[(session_id, name)] = (token, now + seconds)
        return True

    async def _unlock(self, session_id: str, name: str, token: str) -> None:
        if self._locks.get((session_id, name), ("",))[0] == token:
            del self._locks[(session_id, name)]
