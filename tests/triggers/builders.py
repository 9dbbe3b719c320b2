"""Trigger manifests for the tests, validated by the CRD (defaults applied), and a webhook call."""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from itertools import count

import httpx

from kaos.crds import validate
from kaos.triggers.signature import SIGNATURE_HEADER
from kaos.triggers.webhook import DELIVERY_HEADER

UTC = timezone.utc


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def trigger(name: str = "nightly", namespace: str = "team", created: str = "2026-03-01T00:00:00Z", **spec) -> dict:
    """A Trigger; a schedule unless the spec names a webhook."""
    body = {"agent": "reporter", "message": "Write the nightly report."}
    if "webhook" not in spec:
        body["schedule"] = "0 2 * * *"
    body.update(spec)
    body = {key: value for key, value in body.items() if value is not None}
    return validate({"apiVersion": "kaos.tools/v1alpha1", "kind": "Trigger",
                     "metadata": {"name": name, "namespace": namespace, "generation": 3,
                                  "creationTimestamp": created},
                     "spec": copy.deepcopy(body)})


def webhook_trigger(name: str = "on-ci", **spec) -> dict:
    return trigger(name, schedule=None, webhook={"secretRef": {"name": "ci-hook", "key": "hmac"}},
                   message="CI says: {{ .body.status }}", **spec)


def ids():
    """Run ids r1, r2, ... (RunBook.new_id)."""
    numbers = count(1)
    return lambda: f"r{next(numbers)}"


def ready_agent(ready: bool = True) -> dict:
    return {"kind": "Agent", "metadata": {"name": "reporter"},
            "status": {"ready": ready, "phase": "Ready" if ready else "Waiting",
                       "message": "" if ready else "ModelAPI models is not ready"}}


def post_webhook(url: str, body: bytes, sig: str | None = None, delivery: str | None = None) -> httpx.Response:
    """POST a JSON body to a Trigger's webhook, with a signature and a delivery id when given."""
    headers = {"Content-Type": "application/json"}
    if sig is not None:
        headers[SIGNATURE_HEADER] = sig
    if delivery is not None:
        headers[DELIVERY_HEADER] = delivery
    return httpx.post(url, content=body, headers=headers, timeout=30)
