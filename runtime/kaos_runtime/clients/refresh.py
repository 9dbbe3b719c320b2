"""Single-flight, rate-limited background refresh (tool discovery, peer cards), and the
directories it fills (``Discovery``)."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

RETRY_INTERVAL_SECONDS = 2.0
REQUEST_WAIT_SECONDS = 2.0


class Refresher:
    """Runs `action` at most once at a time, and again only after `interval` seconds.
    Callers wait a bounded time for it: a slow server never holds a request for long."""

    def __init__(self, action: Callable[[], Awaitable[None]], interval: float = RETRY_INTERVAL_SECONDS) -> None:
        self._action = action
        self._interval = interval
        self._task: asyncio.Task | None = None
        self._last = float("-inf")

    async def run(self, wait: float | None) -> None:
        if self._task is None or self._task.done():
            self._last = time.monotonic()
            self._task = asyncio.create_task(self._action())
        await asyncio.wait({self._task}, timeout=wait)

    async def run_if_due(self, wait: float = REQUEST_WAIT_SECONDS) -> None:
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=wait)
        elif time.monotonic() - self._last >= self._interval:
            await self.run(wait)


class Discovery:
    """A directory filled in the background by `find` (the tools of the MCP servers, the peers'
    cards): until it is ``complete``, a request may start another round (``refresh_if_incomplete``)."""

    def __init__(self, find: Callable[[], Awaitable[None]]) -> None:
        self._refresher = Refresher(find)

    @property
    def complete(self) -> bool:
        raise NotImplementedError

    async def refresh_if_incomplete(self) -> None:
        if not self.complete:
            await self._refresher.run_if_due()
