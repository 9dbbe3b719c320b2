"""Peer agents: their cards (for the system prompt) and delegation.

A KAOS peer, named in ``PEER_AGENTS``, is delegated to here: the context and the task POSTed to
its ``/v1/chat/completions``. A peer named by URL (``A2A_PEER_URLS``) is an A2A agent, delegated
to over A2A by a2a_peer.py. The loop sees one directory of names either way. A delegation is
sent at most once: again only when no connection could be made (connect_retry.py).
"""

from __future__ import annotations

import asyncio
import json
import logging

from ..core.errors import DelegationError, describe
from ..core.settings import Peer
from .a2a_peer import A2APeer, A2APeers, fetch_card, not_sent_again
from .connect_retry import RETRY_DELAYS, retry_unsent
from .http import HttpClient
from .refresh import Discovery

__all__ = ["DEPTH_HEADER", "DelegationError", "PeerDirectory"]

log = logging.getLogger("kaos_runtime.peers")

DEPTH_HEADER = "X-KAOS-Delegation-Depth"
CARD_TIMEOUT_SECONDS = 5.0


class PeerDirectory(Discovery):
    def __init__(self, peers: tuple[Peer, ...], http: HttpClient, timeout: float,
                 a2a_urls: tuple[str, ...] = (), pause=asyncio.sleep) -> None:
        super().__init__(self._fetch_missing_cards)
        self.named = {peer.name: peer for peer in peers}
        self.a2a = A2APeers(a2a_urls, http, timeout, CARD_TIMEOUT_SECONDS, taken=frozenset(self.named), pause=pause)
        self.http = http
        self.timeout = timeout
        self.pause = pause  # the wait between attempts of a delegation that reached nothing
        self._cards: dict[str, dict] = {}

    @property
    def peers(self) -> dict[str, Peer | A2APeer]:
        """Every peer by the name the model uses for it."""
        return {**self.named, **self.a2a.by_name()}

    @property
    def complete(self) -> bool:
        return len(self._cards) == len(self.named) and self.a2a.complete

    def get(self, name: str) -> Peer | A2APeer | None:
        return self.named.get(name) or self.a2a.get(name)

    def describe(self) -> list[dict]:
        return [
            {"name": name, "description": self._cards.get(name, {}).get("description", "")}
            for name in self.named
        ] + self.a2a.describe()

    async def fetch_cards(self, wait: float | None = None) -> None:
        """Fetch the cards not fetched yet; wait at most `wait` seconds."""
        await self._refresher.run(wait)

    async def _fetch_missing_cards(self) -> None:
        missing = [peer for name, peer in self.named.items() if name not in self._cards]
        results, _ = await asyncio.gather(
            asyncio.gather(*(fetch_card(self.http, peer.card_url, CARD_TIMEOUT_SECONDS) for peer in missing),
                           return_exceptions=True),
            self.a2a.fetch_missing(),
        )
        for peer, result in zip(missing, results):
            if isinstance(result, BaseException):
                log.info("card of peer %s not available yet: %s", peer.name, describe(result))
            else:
                self._cards[peer.name] = result

    async def delegate(self, peer: Peer | A2APeer, messages: list[dict], depth: int, sender: str,
                       extra_headers: dict | None = None) -> str:
        """Give the peer the task (the last message; a KAOS peer gets the context before it too);
        return the peer's answer, or raise DelegationError."""
        headers = {**(extra_headers or {}), DEPTH_HEADER: str(depth), "X-KAOS-Delegated-By": sender}
        if isinstance(peer, A2APeer):
            return await self.a2a.delegate(peer, messages[-1]["content"], headers)
        url = peer.base_url + "/v1/chat/completions"
        payload = {"model": peer.name, "messages": messages, "stream": False}
        headers["Content-Type"] = "application/json"
        body = json.dumps(payload).encode()
        try:
            status, body = await retry_unsent(
                lambda: self.http.request("POST", url, body=body, headers=headers, timeout=self.timeout),
                self.http.unsent, f"delegation to {peer.name}", self.pause)
        except Exception as error:
            where = f"agent {peer.name} at {peer.base_url}"
            if self.http.unsent(error):
                raise DelegationError(f"cannot reach {where}: {describe(error)} "
                                      f"({len(RETRY_DELAYS) + 1} attempts)") from error
            if isinstance(error, TimeoutError):
                raise DelegationError(f"no answer from {where} within {self.timeout:g}s (PEER_TIMEOUT_SECONDS)"
                                      + not_sent_again()) from error
            raise DelegationError(f"the connection to {where} failed: {describe(error)}" + not_sent_again()) \
                from error
        if status != 200:
            raise DelegationError(f"agent {peer.name} answered HTTP {status}: {body[:300].decode(errors='replace')}")
        try:
            return json.loads(body)["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise DelegationError(f"agent {peer.name} sent an answer that is not a chat completion") from error

    async def close(self) -> None:
        await self.a2a.close()
