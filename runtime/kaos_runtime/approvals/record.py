"""One approval: what waits, for whom, until when, and what was decided (pure).

Times are epoch seconds inside, ISO 8601 UTC strings in what the HTTP API shows. A pending
approval past its ``expires_at`` shows as ``expired`` before its waiter has marked it so.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone

from ..core.principal import ANONYMOUS

PENDING, APPROVED, REJECTED, EXPIRED = "pending", "approved", "rejected", "expired"
STATUSES = (PENDING, APPROVED, REJECTED, EXPIRED)
DECISIONS = {"approve": APPROVED, "reject": REJECTED}
# The memory event that records each outcome.
EVENTS = {APPROVED: "approval_granted", REJECTED: "approval_rejected", EXPIRED: "approval_expired"}
REQUESTED_EVENT = "approval_requested"


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


def approval_id(run_id: str, step: int, index: int) -> str:
    """The approval of the ``index``-th action of ``step`` in a run: the same id when a restarted
    process resumes the run, so it finds the approval instead of asking again."""
    return f"apr-{run_id}-{step}-{index}"


def iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Approval:
    id: str
    tool: str
    arguments: dict
    session_id: str
    agent: str
    requested_at: float
    expires_at: float
    step: int = 0
    requester: str = ANONYMOUS
    run_id: str = ""
    status: str = PENDING
    decided_by: str | None = None
    decided_at: float | None = None
    reason: str = ""
    extra: dict = field(default_factory=dict)  # what a nested entry adds: {"peer": ...}

    def status_at(self, now: float) -> str:
        return EXPIRED if self.status == PENDING and now >= self.expires_at else self.status

    def settled(self, status: str, by: str | None, at: float, reason: str) -> "Approval":
        return replace(self, status=status, decided_by=by, decided_at=at, reason=reason)

    def view(self, now: float) -> dict:
        """The approval as ``GET /approvals`` shows it."""
        return {"id": self.id, "tool": self.tool, "arguments": self.arguments, "session_id": self.session_id,
                "status": self.status_at(now), "requested_at": iso(self.requested_at),
                "expires_at": iso(self.expires_at), "decided_by": self.decided_by,
                "decided_at": iso(self.decided_at), "reason": self.reason, "agent": self.agent, "step": self.step,
                "requester": self.requester, **self.extra}

    def requested_event(self) -> dict:
        return {"approval_id": self.id, "tool": self.tool, "arguments": self.arguments,
                "session_id": self.session_id, "step": self.step, "requester": self.requester,
                "expires_at": iso(self.expires_at)}

    def settled_event(self) -> dict:
        return {"approval_id": self.id, "tool": self.tool, "decided_by": self.decided_by,
                "decided_at": iso(self.decided_at), "reason": self.reason}

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Approval":
        return cls(**json.loads(text))
