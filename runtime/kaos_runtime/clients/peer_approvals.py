"""The approvals waiting in the KAOS peers an agent delegates to, seen and decided from it.

A call that waits in a peer (a worker the coordinator delegated to) shows in the coordinator's
``GET /approvals`` as a nested entry, ``"peer": <the peer's name>`` with the peer's own id, and
``POST /approvals/{id}`` on the coordinator decides it in the peer. The peer lists its own peers
in turn; ``HOPS_HEADER`` counts the levels so that agents that are each other's peers stop at
``MAX_DELEGATION_DEPTH``. A2A peers reached by URL have no approvals API and are not asked; a
peer that cannot be reached (or refuses) is left out of the listing. Each request goes on behalf
of the coordinator's caller (the on-behalf-of header signed with ``AUTH_OUTBOUND_TOKEN``,
core/on_behalf.py, with the person's groups), so a peer shows and lets decide what its own rules allow that person.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import quote, urlencode

from ..core.auth import on_behalf_headers
from ..core.errors import describe
from ..core.principal import Principal
from ..core.settings import Peer
from .http import HttpClient

log = logging.getLogger("kaos_runtime.peers")

HOPS_HEADER = "X-KAOS-Approval-Hops"
PEER_APPROVALS_TIMEOUT_SECONDS = 5.0


class PeerApprovals:
    def __init__(self, peers: tuple[Peer, ...], http: HttpClient, sender: str, token: str = "",
                 timeout: float = PEER_APPROVALS_TIMEOUT_SECONDS) -> None:
        self.peers = peers
        self.http = http
        self.timeout = timeout
        self.sender = sender
        self._token = token

    def _headers(self, peer: Peer, person: Principal, hops: int, extra: dict | None = None) -> dict:
        # As a delegation says who sends it (the peer's caller without auth: anonymous via agent:<sender>).
        return {"X-KAOS-Delegated-By": self.sender,
                **on_behalf_headers(self._token, person.text, peer.name, person.groups),
                HOPS_HEADER: str(hops + 1), **(extra or {})}

    async def listing(self, status: str, hops: int, person: Principal) -> list[dict]:
        """Every peer's approvals with this status that ``person`` may see there, each marked with
        the peer it waits behind."""
        found = await asyncio.gather(*(self._list(peer, status, hops, person) for peer in self.peers))
        return [entry for entries in found for entry in entries]

    async def _list(self, peer: Peer, status: str, hops: int, person: Principal) -> list[dict]:
        url = f"{peer.base_url}/approvals?{urlencode({'status': status})}"
        try:
            code, body = await self.http.request("GET", url, headers=self._headers(peer, person, hops),
                                                 timeout=self.timeout)
            if code != 200:
                raise ValueError(f"HTTP {code}: {body[:200].decode(errors='replace')}")
            entries = json.loads(body)["approvals"]
        except Exception as error:
            log.info("approvals of peer %s not available: %s", peer.name, describe(error))
            return []
        return [{**entry, "peer": peer.name} for entry in entries if isinstance(entry, dict)]

    async def decide(self, approval_id: str, body: bytes, person: Principal, hops: int) -> tuple[int, dict] | None:
        """``person``'s decision, in the first peer that knows the approval: its answer (status, body
        with ``peer``; a 403 when its rules refuse the person); None if no peer knows it."""
        for peer in self.peers:
            url = f"{peer.base_url}/approvals/{quote(approval_id, safe='')}"
            headers = self._headers(peer, person, hops, {"Content-Type": "application/json"})
            try:
                code, answer = await self.http.request("POST", url, body=body, headers=headers, timeout=self.timeout)
                if code == 404:
                    continue
                payload = json.loads(answer)
            except Exception as error:
                log.info("deciding %s in peer %s failed: %s", approval_id, peer.name, describe(error))
                continue
            if isinstance(payload, dict):
                for entry in (payload, payload.get("approval")):
                    if isinstance(entry, dict) and "id" in entry:
                        entry["peer"] = peer.name
            return code, payload
        return None
