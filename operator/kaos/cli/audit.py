"""`kaos audit AGENT`: an agent's audit trail (its ``GET /audit``, admins only with authentication;
docs/security.md, "Audit") through the gateway of `kaos up`: who decided, who was refused, which
admin read what, and when."""

from __future__ import annotations

import httpx

from kaos.cli.client import ControlPlaneError
from kaos.cli.display import aligned
from kaos.routes import gateway_path

DETAILS = ("tool", "grant", "decision", "requester", "detail")


class AuditError(ControlPlaneError):
    """The trail could not be read; the message says why, for the user."""


def events(gateway: str, namespace: str, agent: str, token: str | None, limit: int | None) -> list[dict]:
    """The agent's events, oldest first."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    params = {"limit": str(limit)} if limit else {}
    url = gateway.rstrip("/") + gateway_path(namespace, "Agent", agent) + "/audit"
    try:
        response = httpx.get(url, headers=headers, params=params, timeout=30)
    except httpx.HTTPError as error:
        raise AuditError(f"agent {namespace}/{agent} could not be asked: {error}") from None
    if response.status_code == 401:
        raise AuditError(f"agent {namespace}/{agent} needs a valid token (HTTP 401): run `kaos login` or pass --token")
    if response.status_code != 200:
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = response.text[:200]
        raise AuditError(f"agent {namespace}/{agent} answered HTTP {response.status_code}: {detail}")
    return list(response.json().get("events") or [])


def table(found: list[dict]) -> str:
    """TIME, ACTION, USER, OBJECT, DETAIL (the first detail an event has)."""
    if not found:
        return "No audit events."
    rows = [["TIME", "ACTION", "USER", "OBJECT", "DETAIL"]]
    for event in found:
        detail = next((f"{key}={event[key]}" for key in DETAILS if event.get(key)), "")
        rows.append([str(event.get("time", "")), str(event.get("action", "")), str(event.get("user", "")),
                     str(event.get("object", "")), detail[:80]])
    return aligned(rows)
