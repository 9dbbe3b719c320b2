"""The audit trail of an agent (docs/security.md, "Audit"): every approval decision, every
refused call (a missing grant, a refused decision), every forgetting of long-term memories and
every read by an admin is an event
naming who, when, what and the object. Each event is one JSON line on the ``kaos_runtime.audit``
logger (the agent's log: stderr, whatever the other loggers do) and is kept, the newest
``KEEP`` of them, for ``GET /audit`` (this process's; the log is the lasting record).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import deque
from datetime import UTC, datetime

KEEP = 1000
log = logging.getLogger("kaos_runtime.audit")


def _json_lines(logger: logging.Logger) -> None:
    """The audit logger writes its messages, one JSON object each, to stderr, not through the root's format."""
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


class AuditTrail:
    """The events of one agent: ``record`` writes one, ``events`` reads the newest, newest last."""

    def __init__(self, agent: str, keep: int = KEEP, clock=time.time) -> None:
        self.agent, self.clock = agent, clock
        self._events: deque[dict] = deque(maxlen=keep)
        _json_lines(log)

    def record(self, action: str, user: str, obj: str, **detail: str) -> dict:
        """``action``: approval.approved, approval.rejected, approval.refused, call.refused,
        memory.forgotten, admin.read; ``user``: the principal's text; ``obj``: what it acted on."""
        event = {"time": datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="milliseconds"),
                 "agent": self.agent, "action": action, "user": user, "object": obj, **detail}
        self._events.append(event)
        log.info(json.dumps(event, separators=(",", ":")))
        return event

    def events(self, limit: int | None = None) -> list[dict]:
        found = list(self._events)
        return found[-limit:] if limit else found
