"""`kaos approvals`: the tool calls waiting for a person in the agents of the current network.

Every agent answers ``GET /approvals`` and ``POST /approvals/{id}`` (docs/approvals.md); the CLI
reaches them through the gateway of `kaos up`. An approval id is unique within one agent only, so
to decide one the CLI lists the approvals of every agent of the namespace and posts the decision
to the agent that holds that id (or, named with --agent, straight to that agent). A coordinator
also lists its peers' pending calls (entries with ``peer``): such an entry is shown, and decided,
at the peer itself when the peer is an agent of the listing, else through the coordinator, which
passes the decision on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import httpx

from kaos.cli.client import ControlPlaneError, answer_detail
from kaos.cli.display import aligned
from kaos.routes import gateway_path


class ApprovalError(ControlPlaneError):
    """A listing or a decision that did not happen; the message says why, for the user."""


@dataclass(frozen=True)
class Held:
    """One approval as the CLI shows it: ``holder`` is the agent whose tool call waits,
    ``via`` the agent the decision is posted to (the holder itself, or the coordinator that
    listed a peer's call)."""

    namespace: str
    holder: str
    via: str
    approval: dict

    @property
    def id(self) -> str:
        return str(self.approval.get("id", ""))


def held_approvals(namespace: str, listings: dict[str, list[dict]]) -> list[Held]:
    """The approvals of ``listings`` ({agent: its GET /approvals entries}), each once: a peer's
    entry that the peer listed too is the peer's own."""
    own = {(agent, str(entry.get("id"))) for agent, entries in listings.items() for entry in entries
           if not entry.get("peer")}
    seen: set[tuple[str, str]] = set()
    result = []
    for agent, entries in listings.items():
        for entry in entries:
            holder = entry.get("peer") or agent
            key = (holder, str(entry.get("id")))
            if key in seen or (entry.get("peer") and key in own):
                continue
            seen.add(key)
            result.append(Held(namespace, holder, agent, entry))
    return sorted(result, key=lambda held: (str(held.approval.get("requested_at") or ""), held.holder, held.id))


class Approvals:
    """The approvals endpoints of the agents behind one gateway."""

    def __init__(self, gateway: str, token: str | None = None, timeout: float = 30.0):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=gateway.rstrip("/"), headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def _path(self, namespace: str, agent: str, rest: str) -> str:
        return gateway_path(namespace, "Agent", agent) + rest

    def _refusal(self, response: httpx.Response, namespace: str, agent: str) -> str:
        what = f"agent {namespace}/{agent}"
        if response.status_code == 401:
            return f"{what} needs a valid token (HTTP 401): run `kaos login` or pass --token: {answer_detail(response)}"
        return f"{what} answered HTTP {response.status_code}: {answer_detail(response)}"

    def listing(self, namespace: str, agent: str, everything: bool) -> list[dict]:
        """The agent's approvals, pending only unless ``everything``."""
        path = self._path(namespace, agent, "/approvals")
        try:
            response = self.http.get(path, params={"status": "all" if everything else "pending"})
        except httpx.HTTPError as error:
            raise ApprovalError(f"agent {namespace}/{agent} could not be asked: {error}") from None
        if response.status_code != 200:
            raise ApprovalError(self._refusal(response, namespace, agent))
        return list(response.json().get("approvals") or [])

    def gather(self, agents: list[tuple[str, str]], everything: bool) -> tuple[list[Held], list[str]]:
        """The approvals of every (namespace, agent), and a line for each agent that could not be listed."""
        by_namespace: dict[str, dict[str, list[dict]]] = {}
        problems = []
        for namespace, agent in agents:
            try:
                by_namespace.setdefault(namespace, {})[agent] = self.listing(namespace, agent, everything)
            except ApprovalError as error:
                problems.append(str(error))
        held = [h for namespace, listings in by_namespace.items() for h in held_approvals(namespace, listings)]
        return held, problems

    def decide(self, held: Held, decision: str, reason: str) -> dict:
        """POST the decision to the agent the approval is reached through; the updated approval."""
        path = self._path(held.namespace, held.via, f"/approvals/{held.id}")
        try:
            response = self.http.post(path, json={"decision": decision, "reason": reason})
        except httpx.HTTPError as error:
            raise ApprovalError(f"agent {held.namespace}/{held.via} could not be asked: {error}") from None
        if response.status_code == 200:
            return response.json()
        what = f"approval {held.id} of agent {held.namespace}/{held.holder}"
        if response.status_code == 404:
            raise ApprovalError(f"{what} does not exist (HTTP 404): {answer_detail(response)}; "
                                "see `kaos approvals list --all`")
        if response.status_code == 409:
            raise ApprovalError(f"{what} was already decided or has expired (HTTP 409): {answer_detail(response)}")
        raise ApprovalError(self._refusal(response, held.namespace, held.via))


def find(held: list[Held], approval_id: str) -> Held:
    """The one approval with this id; a clear error for none or several."""
    matches = [h for h in held if h.id == approval_id]
    if not matches:
        raise ApprovalError(f"no approval {approval_id!r} in the agents listed: see `kaos approvals list --all`")
    if len(matches) > 1:
        holders = ", ".join(f"{h.namespace}/{h.holder}" for h in matches)
        raise ApprovalError(f"approval id {approval_id!r} is held by several agents ({holders}); "
                            "name one with --agent NAME")
    return matches[0]


def time_left(expires_at: str | None, now: datetime) -> str:
    """``4m 05s`` until ``expires_at`` (ISO 8601), ``expired`` once past, ``-`` when unknown."""
    if not expires_at:
        return "-"
    try:
        seconds = int((datetime.fromisoformat(expires_at.replace("Z", "+00:00")) - now).total_seconds())
    except (TypeError, ValueError):
        return "-"
    if seconds <= 0:
        return "expired"
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {seconds:02d}s"


def _short(value, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def table(held: list[Held], now: datetime, show_namespace: bool = False) -> str:
    """ID, AGENT, TOOL, ARGUMENTS, SESSION, STATUS, and the time left (pending) or who decided."""
    if not held:
        return "No approvals found."
    header = (["NAMESPACE"] if show_namespace else []) + [
        "ID", "AGENT", "TOOL", "ARGUMENTS", "SESSION", "STATUS", "LEFT / DECIDED BY"]
    rows = [header]
    for h in held:
        approval = h.approval
        status = approval.get("status") or "pending"
        if status == "pending":
            when = time_left(approval.get("expires_at"), now)
        else:
            reason = f" ({_short(approval['reason'], 40)})" if approval.get("reason") else ""
            when = f"{approval.get('decided_by') or '-'}{reason}"
        agent = h.holder if h.via == h.holder else f"{h.holder} (via {h.via})"
        rows.append(([h.namespace] if show_namespace else []) + [
            h.id, agent, str(approval.get("tool") or "-"), _short(approval.get("arguments", {}), 40),
            str(approval.get("session_id") or "-"), status, when])
    return aligned(rows)
