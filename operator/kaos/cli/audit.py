"""`kaos audit AGENT`: an agent's audit trail (its ``GET /audit``, admins only with authentication;
docs/security.md, "Audit") through the gateway of `kaos up`: who decided, who was refused, which
admin read what, and when."""

from __future__ import annotations

import json

import httpx

from kaos.api import AGENT
from kaos.cli.client import ControlPlaneError
from kaos.cli.context import check_names, control_plane, token
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


def cmd_audit(args) -> int:
    check_names(AGENT, args.namespace, args.agent)
    found = events(control_plane().url, args.namespace, args.agent, token(args), args.limit)
    print(json.dumps({"events": found}, indent=2) if args.output == "json" else table(found))
    return 0



def add_parser(commands) -> None:
    trail = commands.add_parser("audit", help="an agent's audit trail: decisions, refusals, forgotten memories, admin reads "
                                              "(docs/security.md, \"Audit\")")
    trail.add_argument("agent")
    trail.add_argument("-n", "--namespace", default="default")
    trail.add_argument("--token", help="bearer token of an admin of the agent (with spec.auth; default: that of `kaos login`)")
    trail.add_argument("--limit", type=int, help="only the newest LIMIT events")
    trail.add_argument("-o", "--output", choices=["table", "json"], default="table")
    trail.set_defaults(run=cmd_audit)

