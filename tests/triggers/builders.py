"""Trigger manifests for the tests, validated by the CRD (defaults applied), and a webhook call."""

from __future__ import annotations

import copy
import re
from datetime import datetime, timezone
from itertools import count
from pathlib import Path

import httpx

from kaos.crds import validate

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


def post_webhook(url: str, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    """POST a JSON body to a Trigger's webhook with these headers (``signed_headers`` signs a call)."""
    return httpx.post(url, content=body, headers={"Content-Type": "application/json", **(headers or {})}, timeout=30)


def documented_call() -> str:
    """The shell lines of docs/triggers.md that sign a webhook call and send it with curl."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "triggers.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return next(block for block in blocks if "openssl dgst" in block and "X-KAOS-Signature-256" in block)
