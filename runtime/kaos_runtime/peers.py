"""Peer agents: their cards (for the system prompt) and delegation over HTTP."""

from __future__ import annotations

import asyncio
import json
import logging

from .errors import describe
from .http import HttpClient
from .refresh import Refresher
from .settings import Peer

log = logging.getLogger("kaos_runtime.peers")

DEPTH_HEADER = "X-KAOS-Delegation-Depth"
CARD_TIMEOUT_SECONDS = 5.0


class DelegationError(Exception):
    """A peer could not be reached or did not answer properly."""


class PeerDirectory:
    def __init__(self, peers: tuple[Peer, ...], http: HttpClient, timeout: float) -> None:
        self.peers = {peer.name: peer for peer in peers}
        self.http = http
        self.timeout = timeout
        self._cards: dict[str, dict] = {}
        self._refresher = Refresher(self._fetch_missing_cards)

    @property
    def complete(self) -> bool:
        return len(self._cards) == len(self.peers)

    def get(self, name: str) -> Peer | None:
        return self.peers.get(name)

    def describe(self) -> list[dict]:
        return [
            {"name": name, "description": self._cards.get(name, {}).get("description", "")}
            for name in self.peers
        ]

    async def fetch_cards(self, wait: float | None = None) -> None:
        """Fetch the cards not fetched yet; wait at most `wait` seconds."""
        await self._refresher.run(wait)

    async def refresh_if_incomplete(self) -> None:
        if not self.complete:
            await self._refresher.run_if_due()

    async def _fetch_missing_cards(self) -> None:
        missing = [peer for name, peer in self.peers.items() if name not in self._cards]
        results = await asyncio.gather(*(self._card(peer) for peer in missing), return_exceptions=True)
        for peer, result in zip(missing, results):
            if isinstance(result, BaseException):
                log.info("card of peer %s not available yet: %s", peer.name, describe(result))
            else:
                self._cards[peer.name] = result

    async def _card(self, peer: Peer) -> dict:
        status, body = await self.http.request("GET", peer.card_url, timeout=CARD_TIMEOUT_SECONDS)
        if status != 200:
            raise DelegationError(f"HTTP {status}")
        card = json.loads(body)
        if not isinstance(card, dict):
            raise DelegationError("the card is not a JSON object")
        return card

    async def delegate(self, peer: Peer, messages: list[dict], depth: int, sender: str,
                       extra_headers: dict | None = None) -> str:
        """POST the context and a task-delegation message; return the peer's answer."""
        url = peer.base_url + "/v1/chat/completions"
        payload = {"model": peer.name, "messages": messages, "stream": False}
        headers = {**(extra_headers or {}), DEPTH_HEADER: str(depth), "X-KAOS-Delegated-By": sender,
                   "Content-Type": "application/json"}
        try:
            status, body = await self.http.request("POST", url, body=json.dumps(payload).encode(),
                                                   headers=headers, timeout=self.timeout)
        except Exception as error:
            raise DelegationError(f"cannot reach agent {peer.name} at {peer.base_url}: {describe(error)}") from error
        if status != 200:
            raise DelegationError(f"agent {peer.name} answered HTTP {status}: {body[:300].decode(errors='replace')}")
        try:
            return json.loads(body)["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise DelegationError(f"agent {peer.name} sent an answer that is not a chat completion") from error
