"""Retry delays: exponential, capped, per key, reset on success (pure, no I/O)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable


def exponential(count: int, base: float, cap: float) -> float:
    """The delay after the ``count``-th failure in a row (1, 2, ...): base, 2*base, 4*base, ... at most cap."""
    return min(cap, base * 2 ** max(count - 1, 0))


@dataclass
class Backoff:
    base: float = 5.0
    cap: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict = field(default_factory=dict)  # key -> (count, retry_at)

    def fail(self, key) -> float:
        """Record a failure; returns the delay before the next attempt."""
        count = self._failures.get(key, (0, 0.0))[0] + 1
        delay = exponential(count, self.base, self.cap)
        self._failures[key] = (count, self.clock() + delay)
        return delay

    def succeed(self, key) -> None:
        self._failures.pop(key, None)

    def blocked(self, key) -> bool:
        """True while the delay after the last failure has not passed."""
        return self.remaining(key) > 0

    def remaining(self, key) -> float:
        """Seconds until the next attempt is due (0 when it is, or after no failure)."""
        entry = self._failures.get(key)
        return 0.0 if entry is None else max(0.0, entry[1] - self.clock())
