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

import argparse
import json
import sys
from dataclasses import dataclass
from datetime import datetime, timezone

import httpx

from kaos.api import AGENT
from kaos.cli.client import ControlPlaneError, answer_detail
from kaos.cli.context import UsageError, check_names, control_plane, token
from kaos.cli.display import namespaced
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
    rows = []
    for h in held:
        approval = h.approval
        status = approval.get("status") or "pending"
        if status == "pending":
            when = time_left(approval.get("expires_at"), now)
        else:
            reason = f" ({_short(approval['reason'], 40)})" if approval.get("reason") else ""
            when = f"{approval.get('decided_by') or '-'}{reason}"
        agent = h.holder if h.via == h.holder else f"{h.holder} (via {h.via})"
        rows.append((h.namespace, [
            h.id, agent, str(approval.get("tool") or "-"), _short(approval.get("arguments", {}), 40),
            str(approval.get("session_id") or "-"), status, when]))
    return namespaced(["ID", "AGENT", "TOOL", "ARGUMENTS", "SESSION", "STATUS", "LEFT / DECIDED BY"], rows,
                      show_namespace)


# The commands: `kaos approvals list|approve|reject`.


def _approvals_of_network(args) -> tuple[Approvals, list[Held], list[str]]:
    """The approvals of every Ready agent of the namespace (all namespaces with -A)."""
    client = control_plane()
    namespace = None if getattr(args, "all_namespaces", False) else args.namespace
    agents = [(a["metadata"]["namespace"], a["metadata"]["name"]) for a in client.resources("Agent", namespace)
              if (a.get("status") or {}).get("ready")]
    if not agents:
        where = "any namespace" if namespace is None else f"namespace {namespace!r}"
        raise UsageError(f"no Ready agent in {where} (see `kaos get agents`)")
    gateway = Approvals(client.url, token=token(args))
    held, problems = gateway.gather(agents, everything=args.all)
    return gateway, held, problems


def cmd_approvals_list(args) -> int:
    gateway, held, problems = _approvals_of_network(args)
    gateway.close()
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps({"approvals": [{**h.approval, "agent": h.holder, "namespace": h.namespace, "via": h.via}
                                        for h in held]}, indent=2))
    else:
        print(table(held, datetime.now(timezone.utc), show_namespace=args.all_namespaces))
    return 1 if problems and not held else 0


def cmd_approvals_decide(args) -> int:
    if args.agent:  # straight to that agent: no search
        check_names(AGENT, args.namespace, args.agent)
        gateway = Approvals(control_plane().url, token=token(args))
        target = Held(args.namespace, args.agent, args.agent, {"id": args.id})
    else:
        gateway, held, problems = _approvals_of_network(args)
        try:
            target = find(held, args.id)
        except ApprovalError as error:
            gateway.close()
            raise ApprovalError("; ".join([str(error), *problems])) from None
    try:
        decided = gateway.decide(target, args.decision, args.reason or "")
    finally:
        gateway.close()
    outcome = decided.get("status") or args.decision
    reason = f": {decided['reason']}" if decided.get("reason") else ""
    print(f"approval {target.id} of agent {target.namespace}/{target.holder} ({decided.get('tool') or '-'}) "
          f"{outcome} by {decided.get('decided_by') or '-'}{reason}")
    return 0


APPROVALS_HELP = """Tool calls waiting for a person's decision in the agents of the current network (docs/approvals.md).
The CLI asks every Ready agent of the namespace (-A: of every namespace) through the gateway of `kaos up`.
An approval id is unique within one agent: `approve`/`reject` list the approvals of every agent and
send the decision to the one holding the id; with --agent NAME they send it to that agent without
searching (needed when several agents hold the id). A peer's pending call shows at the peer itself;
one only a coordinator lists is decided through it."""


def add_parser(commands) -> None:
    group = commands.add_parser("approvals", help="list, approve or reject tool calls waiting for a decision",
                                description=APPROVALS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = group.add_subparsers(dest="action", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("-A", "--all-namespaces", action="store_true")
        parser.add_argument("--token", help="bearer token for agents with spec.auth (names who decided; default: that of `kaos login`)")

    listing = actions.add_parser("list", help="pending approvals (--all: decided and expired ones too)",
                                 description=APPROVALS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    listing.add_argument("--all", action="store_true", help="also approved, rejected and expired ones")
    listing.add_argument("-o", "--output", choices=["table", "json"], default="table")
    common(listing)
    listing.set_defaults(run=cmd_approvals_list)
    for decision in ("approve", "reject"):
        action = actions.add_parser(decision, help=f"{decision} a pending tool call (its id from `kaos approvals list`)",
                                    description=APPROVALS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
        action.add_argument("id", help="the approval id")
        action.add_argument("--reason", default="", help="why (recorded; a rejection's reason reaches the model)")
        action.add_argument("--agent", help="the agent holding the id: decide there without searching")
        common(action)
        action.set_defaults(run=cmd_approvals_decide, decision=decision, all=True)


