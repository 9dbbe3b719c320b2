"""A clock for TriggerEngine's ``clock`` and ``sleep``: time moves only when the test moves it,
so no test waits for real cron seconds. A sleep lasts a duration, as asyncio's does: ``advance``
lets time pass (and ends the sleeps it covers), ``set`` makes the wall clock jump (and ends none)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta


class ManualClock:
    def __init__(self, start: datetime) -> None:
        self.now = start
        self.elapsed = 0.0  # seconds that have passed (what sleeps count)
        self._sleepers: list[tuple[float, asyncio.Future]] = []

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Returns once the test has let ``seconds`` pass (at once for none)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        entry = (self.elapsed + seconds, asyncio.get_running_loop().create_future())
        self._sleepers.append(entry)
        try:
            await entry[1]
        finally:
            self._sleepers.remove(entry)

    @property
    def sleeping(self) -> int:
        """How many sleeps are waiting for time to pass (a schedule between two due times is one)."""
        return sum(1 for _, future in self._sleepers if not future.done())

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.elapsed += seconds
        for deadline, future in self._sleepers:
            if deadline <= self.elapsed and not future.done():
                future.set_result(None)

    def set(self, instant: datetime) -> None:
        """The wall clock jumps to ``instant``; no sleep ends."""
        self.now = instant
