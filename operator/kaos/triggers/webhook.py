"""A webhook call to a Trigger: refused (and why) or accepted, before any run starts.

``POST /<namespace>/trigger/<name>`` with the raw body signed in ``X-KAOS-Signature-256``; an
``X-KAOS-Delivery`` id makes a redelivery answer with the first delivery's run instead of
running again (within the history window: the runs in progress and status.history).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kaos.triggers.runs import Start
from kaos.triggers.signature import verify
from kaos.triggers.spec import TriggerSpec

MAX_BODY_BYTES = 1 << 20
DELIVERY_HEADER = "X-KAOS-Delivery"


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


def refusal(spec: TriggerSpec | None, problem: str | None, secret: bytes | None, body: bytes,
            signature: str | None, agent_problem: str | None) -> Answer | None:
    """Why the call starts nothing, or None when it may start a run. ``problem``: why the
    Trigger is Failed; ``secret``: the HMAC key (None when it cannot be read). A caller without
    a valid signature learns nothing but 401 (nor whether the Trigger is suspended)."""
    if spec is None:
        return Answer(404, {"detail": "no such trigger"})
    if len(body) > MAX_BODY_BYTES:
        return Answer(413, {"detail": f"the body is larger than {MAX_BODY_BYTES} bytes"})
    if spec.webhook is None:
        return Answer(404, {"detail": f"trigger {spec.name} has no webhook"})
    if secret is None:
        return Answer(503, {"detail": f"trigger {spec.name} cannot verify signatures now (see its status)"})
    if not verify(secret, body, signature):
        return Answer(401, {"detail": "missing or wrong X-KAOS-Signature-256 (sha256=<hex HMAC-SHA256 of the body>)"})
    if spec.suspend:
        return Answer(409, {"detail": f"trigger {spec.name} is suspended"})
    if problem:
        return Answer(409, {"detail": f"trigger {spec.name} is Failed: {problem}"})
    if agent_problem:
        return Answer(503, {"detail": agent_problem})
    return None


def answer(start: Start) -> Answer:
    """The answer to an accepted call: 202 with the new run, 200 with a replayed delivery's
    first run, 409 when concurrencyPolicy Forbid skipped it."""
    if start.original is not None:
        return Answer(200, {"runId": start.original["runId"], "sessionId": start.original.get("sessionId", ""),
                            "replay": True})
    if start.run is None:
        return Answer(409, {"detail": (start.skipped or {}).get("summary", "skipped"),
                            "runId": (start.skipped or {}).get("runId", "")})
    return Answer(202, {"runId": start.run.run_id, "sessionId": start.run.session_id})
