"""The webhook deliveries a Trigger remembers, apart from its run history.

Every delivery id that started a run is kept until its call's timestamp has left the window
(``kaos.triggers.signature.WINDOW_SECONDS``), whatever status.history holds: within that time a
replay of the call, the only one an attacker can make, finds its id and runs nothing. They are
written in status.deliveries with the run, before its message goes out, so a control plane that
restarts remembers them too. At most MAX_REMEMBERED are kept: when that many are still in the
window, a new delivery is refused (429) until the oldest expires, never forgotten early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable, Mapping

from kaos.triggers.signature import WINDOW_SECONDS
from kaos.triggers.times import parse_time, timestamp

MAX_REMEMBERED = 200


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    run_id: str
    session_id: str
    expires: datetime

    def entry(self) -> dict[str, str]:
        return {"deliveryId": self.delivery_id, "runId": self.run_id, "sessionId": self.session_id,
                "expires": timestamp(self.expires)}


@dataclass
class Deliveries:
    remembered: dict[str, Delivery] = field(default_factory=dict)
    # status.deliveries, kept in step with ``remembered``: status is written at every run's start and end.
    entries: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_status(cls, entries: Iterable[Mapping[str, Any]] | None, now: datetime) -> "Deliveries":
        found = cls()
        for entry in entries or []:
            try:
                expires = parse_time(entry.get("expires"))
            except ValueError:
                expires = None
            if expires is not None and entry.get("deliveryId") and entry.get("runId"):
                found._put(Delivery(entry["deliveryId"], entry["runId"], entry.get("sessionId") or "", expires))
        found.prune(now)
        return found

    def find(self, delivery_id: str, now: datetime) -> Delivery | None:
        found = self.remembered.get(delivery_id)
        return found if found is not None and found.expires >= now else None

    def full(self, now: datetime) -> bool:
        self.prune(now)
        if len(self.remembered) >= MAX_REMEMBERED:  # the expired ones behind a later one count no more
            for key in [key for key, d in self.remembered.items() if d.expires < now]:
                self.forget(key)
        return len(self.remembered) >= MAX_REMEMBERED

    def retry_after(self, now: datetime) -> int:
        """Seconds until one remembered delivery expires (at least 1)."""
        soonest = min((d.expires for d in self.remembered.values()), default=now)
        return max(1, math.ceil((soonest - now).total_seconds()))

    def remember(self, delivery_id: str, run_id: str, session_id: str, signed_at: datetime, now: datetime) -> None:
        """Keep a delivery that started a run until a replay of its call could no longer be accepted."""
        expires = max(signed_at, now) + timedelta(seconds=WINDOW_SECONDS)
        self.forget(delivery_id)  # the newest last: prune() looks at the front
        self._put(Delivery(delivery_id, run_id, session_id, expires))

    def forget(self, delivery_id: str) -> None:
        self.remembered.pop(delivery_id, None)
        self.entries.pop(delivery_id, None)

    def _put(self, delivery: Delivery) -> None:
        self.remembered[delivery.delivery_id] = delivery
        self.entries[delivery.delivery_id] = delivery.entry()

    def prune(self, now: datetime) -> None:
        """Forget the expired deliveries at the front, the oldest remembered: amortised O(1) a call.
        (An expired one behind a later one stays a little longer, at most one window: ``find``
        does not return it.)"""
        while self.remembered:
            key, oldest = next(iter(self.remembered.items()))
            if oldest.expires >= now:
                return
            self.forget(key)

    def status(self) -> list[dict[str, str]]:
        return list(self.entries.values())
