"""What a client sends to ``/approvals``: the listing's filters and a decision, validated by
hand (clear 400s, as protocols.chat_request does for chat)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..approvals import DECISIONS, STATUSES
from .chat_request import BadRequest

LISTED = ("all", *STATUSES)
MAX_REASON = 2000


@dataclass(frozen=True)
class Decision:
    decision: str  # approve | reject
    reason: str


def parse_status(raw: str | None) -> str:
    """``status``: pending (the default), all, or one of the statuses."""
    status = (raw or "pending").strip().lower()
    if status not in LISTED:
        raise BadRequest(400, f"status must be one of {', '.join(LISTED)}, got {raw!r}")
    return status


def parse_decision(body: bytes) -> Decision:
    try:
        payload = json.loads(body) if body.strip() else None
    except ValueError as error:
        raise BadRequest(400, f"the body is not valid JSON: {error}") from None
    if not isinstance(payload, dict):
        raise BadRequest(400, 'the body must be a JSON object: {"decision": "approve"|"reject", "reason": "..."}')
    decision = payload.get("decision")
    if not isinstance(decision, str) or decision not in DECISIONS:
        raise BadRequest(400, f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    reason = payload.get("reason", "")
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        raise BadRequest(400, "reason must be a string")
    if len(reason) > MAX_REASON:
        raise BadRequest(400, f"reason is longer than {MAX_REASON} characters")
    return Decision(decision, reason.strip())


def parse_hops(raw: str | None) -> int:
    """``X-KAOS-Approval-Hops``: how many coordinators passed this request on (absent or bad: 0)."""
    return int(raw) if raw is not None and raw.strip().isdigit() and len(raw.strip()) < 4 else 0
