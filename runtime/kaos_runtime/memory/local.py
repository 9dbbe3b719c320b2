"""The ``local`` backend: events in this process, bounded, oldest evicted first."""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque

from ..core.settings import MemorySettings
from . import Memory, turns


class LocalMemory(Memory):
    """Events per session in an ordered dict of deques. At most ``max_sessions`` sessions (the
    least recently active one is dropped first) and ``max_session_events`` events per session
    (its oldest dropped first). Every method runs on the event loop without awaiting inside,
    so concurrent requests never interleave partial updates."""

    backend = "local"

    def __init__(self, config: MemorySettings) -> None:
        super().__init__(config)
        self._sessions_by_id: OrderedDict[str, deque] = OrderedDict()
        self._sequence = itertools.count()

    async def _record(self, session_id: str, event: dict) -> None:
        events = self._sessions_by_id.get(session_id)
        if events is None:
            events = deque(maxlen=self.config.max_session_events)
            self._sessions_by_id[session_id] = events
            while len(self._sessions_by_id) > self.config.max_sessions:
                self._sessions_by_id.popitem(last=False)
        else:
            self._sessions_by_id.move_to_end(session_id)
        events.append((next(self._sequence), event))

    async def _events(self, limit, session_id, event_type):
        if session_id is not None:
            pools = [self._sessions_by_id.get(session_id, ())]
        else:
            pools = list(self._sessions_by_id.values())
        matching = [item for pool in pools for item in pool
                    if event_type is None or item[1]["event_type"] == event_type]
        if session_id is None:
            matching.sort(key=lambda item: item[0])
        total = len(matching)
        if limit is not None:
            matching = matching[-limit:] if limit > 0 else []
        return [event for _, event in matching], total

    async def _sessions(self) -> list[str]:
        return list(self._sessions_by_id)

    async def _history(self, session_id: str, limit: int) -> list[dict]:
        return turns([event for _, event in self._sessions_by_id.get(session_id, ())], limit)
