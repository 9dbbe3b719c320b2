"""The approvals waiting in the KAOS peers an agent delegates to, seen and decided from it.

A call that waits in a peer (a worker the coordinator delegated to) shows in the coordinator's
``GET /approvals`` as a nested entry, ``"peer": <the peer's name>`` with the peer's own id, and
``POST /approvals/{id}`` on the coordinator decides it in the peer. The peer lists its own peers
in turn; ``HOPS_HEADER`` counts the levels so that agents that are each other's peers stop at
``MAX_DELEGATION_DEPTH``. A2A peers reached by URL have no approvals API and are not asked; a
peer that cannot be reached is left out of the listing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import quote, urlencode

from ..core.errors import describe
from ..core.settings import Peer
from .http import HttpClient

log = logging.getLogger("kaos_runtime.peers")

HOPS_HEADER = "X-KAOS-Approval-Hops"
# Who decided, when a coordinator passes a person's decision on to a peer.
DECIDED_BY_HEADER = "X-KAOS-Decided-By"
PEER_APPROVALS_TIMEOUT_SECONDS = 5.0


class PeerApprovals:
    def __init__(self, peers: tuple[Peer, ...], http: HttpClient, sender: str, token: str = "",
                 timeout: float = PEER_APPROVALS_TIMEOUT_SECONDS) -> None:
        self.peers = peers
        self.http = http
        self.timeout = timeout
        # As a delegation says who sends it (the peer's caller without auth: agent:<sender>).
        self._headers_base = {"X-KAOS-Delegated-By": sender, **({"Authorization": f"Bearer {token}"} if token else {})}

    def _headers(self, hops: int, extra: dict | None = None) -> dict:
        return {**self._headers_base, HOPS_HEADER: str(hops + 1), **(extra or {})}

    async def listing(self, status: str, hops: int) -> list[dict]:
        """Every peer's approvals with this status, each marked with the peer it waits behind."""
        found = await asyncio.gather(*(self._list(peer, status, hops) for peer in self.peers))
        return [entry for entries in found for entry in entries]

    async def _list(self, peer: Peer, status: str, hops: int) -> list[dict]:
        url = f"{peer.base_url}/approvals?{urlencode({'status': status})}"
        try:
            code, body = await self.http.request("GET", url, headers=self._headers(hops), timeout=self.timeout)
            if code != 200:
                raise ValueError(f"HTTP {code}: {body[:200].decode(errors='replace')}")
            entries = json.loads(body)["approvals"]
        except Exception as error:
            log.info("approvals of peer %s not available: %s", peer.name, describe(error))
            return []
        return [{**entry, "peer": peer.name} for entry in entries if isinstance(entry, dict)]

    async def decide(self, approval_id: str, body: bytes, decided_by: str, hops: int) -> tuple[int, dict] | None:
        """The first peer's answer that knows the approval (status, body with ``peer``); None if none does."""
        headers = self._headers(hops, {"Content-Type": "application/json", DECIDED_BY_HEADER: decided_by})
        for peer in self.peers:
            url = f"{peer.base_url}/approvals/{quote(approval_id, safe='')}"
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
