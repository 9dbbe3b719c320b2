"""A webhook call to a Trigger: refused (and why) or accepted, before any run starts.

``POST /<namespace>/trigger/<name>`` carries the raw body, ``X-KAOS-Timestamp``,
``X-KAOS-Delivery`` and ``X-KAOS-Signature-256`` over all three (``kaos.triggers.signature``).
What a call can be refused for without knowing any Trigger (its size, a header missing or
malformed, a timestamp outside the window, no signature) is answered first (``malformed``); then
an unknown Trigger, one without a webhook or whose key cannot be found, and a wrong signature
all get one answer, ``NOT_SIGNED``, so a caller without the key learns nothing about the Trigger,
not even that it exists. A delivery id that started a run answers with that run instead of
running again (``kaos.triggers.runs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from kaos.triggers.runs import Start
from kaos.triggers.signature import (
    DELIVERY_HEADER,
    DELIVERY_ID,
    SIGNATURE_HEADER,
    TIMESTAMP,
    TIMESTAMP_HEADER,
    WINDOW_SECONDS,
    verify,
)

MAX_BODY_BYTES = 1 << 20

NOT_SIGNED_DETAIL = (f"missing or wrong {SIGNATURE_HEADER}, or no webhook here: the signature is sha256=<hex "
                     f"HMAC-SHA256 of '<{TIMESTAMP_HEADER}>.<{DELIVERY_HEADER}>.<body>'> with the Trigger's key")


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


NOT_SIGNED = Answer(401, {"detail": NOT_SIGNED_DETAIL})


@dataclass(frozen=True)
class WebhookCall:
    """What a webhook call brings: its raw body and the three headers (None when absent)."""

    body: bytes
    signature: str | None = None
    timestamp: str | None = None
    delivery: str | None = None

    @classmethod
    def read(cls, body: bytes, header: Callable[[str], str | None]) -> "WebhookCall":
        """The call from its body and a header lookup (by the names above, in any case the server needs)."""
        values = [header(name) for name in (SIGNATURE_HEADER, TIMESTAMP_HEADER, DELIVERY_HEADER)]
        return cls(body, *(value.strip() if value is not None else None for value in values))

    @property
    def signed_at(self) -> datetime:
        """The call's timestamp (once ``malformed`` found nothing)."""
        return datetime.fromtimestamp(int(self.timestamp or 0), timezone.utc)


def malformed(call: WebhookCall, now: datetime) -> Answer | None:
    """What refuses the call whatever Trigger it names, or None."""
    if len(call.body) > MAX_BODY_BYTES:
        return Answer(413, {"detail": f"the body is larger than {MAX_BODY_BYTES} bytes"})
    if not call.timestamp or not TIMESTAMP.fullmatch(call.timestamp):
        return Answer(400, {"detail": f"{TIMESTAMP_HEADER} is required: the time of signing in Unix seconds"})
    if not call.delivery or not DELIVERY_ID.fullmatch(call.delivery):
        return Answer(400, {"detail": f"{DELIVERY_HEADER} is required: an id of the call, 1-128 characters of "
                                      "A-Z a-z 0-9 _ - (a UUID, for example)"})
    offset = int(call.timestamp) - now.timestamp()
    if abs(offset) > WINDOW_SECONDS:
        return Answer(401, {"detail": f"{TIMESTAMP_HEADER} is {abs(offset):.0f} s {'ahead of' if offset > 0 else 'behind'}"
                                      f" this server's clock; a call is accepted within {WINDOW_SECONDS} s either "
                                      "side: sign each call when it is sent"})
    if not call.signature:
        return NOT_SIGNED
    return None


def refusal(call: WebhookCall, secret: bytes | None, *, name: str, suspended: bool, problem: str | None,
            agent_problem: str | None) -> Answer | None:
    """Why a well-formed call to a Trigger starts nothing, or None when it may start a run.
    ``secret``: the HMAC key (None for an unknown Trigger, one without a webhook, or a key that
    does not exist); ``problem``: why the Trigger is Failed. A caller without a valid signature
    learns nothing but NOT_SIGNED (nor whether the Trigger is suspended or Failed)."""
    if secret is None or not verify(secret, call.timestamp, call.delivery, call.body, call.signature):
        return NOT_SIGNED
    if suspended:
        return Answer(409, {"detail": f"trigger {name} is suspended"})
    if problem:
        return Answer(409, {"detail": f"trigger {name} is Failed: {problem}"})
    if agent_problem:
        return Answer(503, {"detail": agent_problem})
    return None


def answer(start: Start) -> Answer:
    """The answer to an accepted call: 202 with the new run, 200 with a replayed delivery's
    first run, 429 (Retry-After) over a limit, 409 when concurrencyPolicy Forbid skipped it."""
    if start.original is not None:
        return Answer(200, {"runId": start.original["runId"], "sessionId": start.original.get("sessionId", ""),
                            "replay": True})
    if start.busy is not None:
        return Answer(429, {"detail": f"{start.busy}: try again later", **_skipped_run(start)},
                      {"Retry-After": str(max(1, start.retry_after))})
    if start.run is None:
        return Answer(409, {"detail": (start.skipped or {}).get("summary", "skipped"), **_skipped_run(start)})
    return Answer(202, {"runId": start.run.run_id, "sessionId": start.run.session_id})


def _skipped_run(start: Start) -> dict[str, str]:
    return {"runId": start.skipped["runId"]} if start.skipped else {}
