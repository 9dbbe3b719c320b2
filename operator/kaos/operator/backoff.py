"""Per-resource retry delays after helm failures: exponential, capped, reset on success."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Backoff:
    base: float = 5.0
    cap: float = 300.0
    clock: callable = time.monotonic
    _failures: dict = field(default_factory=dict)  # key -> (count, retry_at)

    def fail(self, key) -> float:
        """Record a failure; returns the delay before the next attempt."""
        count = self._failures.get(key, (0, 0.0))[0] + 1
        delay = min(self.cap, self.base * 2 ** (count - 1))
        self._failures[key] = (count, self.clock() + delay)
        return delay

    def succeed(self, key) -> None:
        self._failures.pop(key, None)

    def blocked(self, key) -> bool:
        """True while the delay after the last failure has not passed."""
        entry = self._failures.get(key)
        return entry is not None and self.clock() < entry[1]
