"""Peers reached by URL over A2A (issue 12): agents KAOS did not deploy, or KAOS agents
elsewhere, named by URL in ``agentNetwork.access`` and given to the runtime as ``A2A_PEER_URLS``.

- The card: ``<base>/.well-known/agent-card.json`` (A2A 0.3 and 1.0), else, when that path is
  not found, the older ``<base>/.well-known/agent.json``; a URL that is a card URL already is
  fetched as it is. Cards are fetched with the KAOS peers' ones: at startup (bounded), then
  again while one is missing, and at the latest when a delegation needs it. The card is public:
  no credential goes with its request.
- The name: the card's ``name``; without one (or when another peer has it already), a name
  derived from the URL: host, port and path, lower case, every run of other characters a
  ``-`` (``http://127.0.0.1:9311`` -> ``127-0-0-1-9311``), with ``-2``, ``-3``, ... should two
  URLs give the same. Until its card is fetched the peer is listed under that derived name,
  which keeps reaching it afterwards too.
- Delegation: the task as one A2A message (the coordinator's context is not sent), with the
  official a2a-sdk client, which takes the card's JSON-RPC interface and protocol version
  (``SendMessage`` for 1.0, ``message/send`` for 0.3); blocking, not streamed. The KAOS headers
  (delegation depth, delegating agent, outbound credential, trace context) go with it as HTTP
  headers. The message is sent at most once: again only when no connection could be made
  (connect_retry.py). The answer is the completed task's artifacts (or the message the agent answered
  with); an unreachable agent, an HTTP or JSON-RPC error, a task that ended any other way
  (failed, rejected, canceled, input or auth required) and an answer that is neither task nor
  message are each a DelegationError, the loop's one delegation error path.

``PeerDirectory`` (peers.py) holds one ``A2APeers`` beside its KAOS peers; the loop sees one
directory of names. The SDK is imported on first use.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
from urllib.parse import urlsplit

from ..core.errors import DelegationError, describe
from ..core.settings import peer_base_url
from .connect_retry import RETRY_DELAYS, retry_unsent
from .http import HttpClient

log = logging.getLogger("kaos_runtime.a2a_peer")

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


class CardNotFound(DelegationError):
    """HTTP 404 for a card: the next card path may have it."""


def not_sent_again() -> str:
    """What a delegation's error adds when the task may have reached the peer."""
    return "; the peer may have run the task, so it was not sent again (a delegation is sent at most once)"


def _connect_refused(error: BaseException) -> bool:
    """An a2a-sdk client error for a request that made no connection (nothing was sent)."""
    from a2a.client.errors import A2AClientError
    from httpx import ConnectError

    return isinstance(error, A2AClientError) and isinstance(error.__cause__, ConnectError)


async def fetch_card(http: HttpClient, url: str, timeout: float) -> dict:
    """The JSON object served at ``url``; DelegationError for another status or body."""
    status, body = await http.request("GET", url, timeout=timeout)
    if status != 200:
        raise (CardNotFound if status == 404 else DelegationError)(f"HTTP {status} from {url}")
    try:
        card = json.loads(body)
    except ValueError:
        raise DelegationError(f"the card at {url} is not JSON") from None
    if not isinstance(card, dict):
        raise DelegationError(f"the card at {url} is not a JSON object")
    return card


def derived_name(url: str) -> str:
    """A stable name from the URL: host, port and path, lower case, other runs of characters ``-``."""
    parts = urlsplit(peer_base_url(url))
    where = (parts.hostname or "") + (f":{parts.port}" if parts.port else "") + parts.path
    return re.sub(r"[^a-z0-9]+", "-", where.lower()).strip("-") or "a2a-agent"


class A2APeer:
    """One A2A agent named by URL; ``name`` is set by ``A2APeers`` (from the card, or derived)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.base_url = peer_base_url(url)
        self.derived = derived_name(url)
        self.name = self.derived
        self.card: dict | None = None
        self.client = None  # the a2a-sdk client, made from the card on first use

    @property
    def card_urls(self) -> list[str]:
        if self.base_url != self.url.rstrip("/"):  # a card URL was given
            return [self.url]
        return [self.base_url + path for path in CARD_PATHS]

    @property
    def card_name(self) -> str:
        name = (self.card or {}).get("name")
        return name.strip() if isinstance(name, str) else ""


class A2APeers:
    """The A2A peers of one agent: their cards, their names, delegation to them."""

    def __init__(self, urls: tuple[str, ...], http: HttpClient, timeout: float, card_timeout: float,
                 taken: frozenset[str] = frozenset(), pause=asyncio.sleep) -> None:
        self._peers = [A2APeer(url) for url in urls]
        self.http = http
        self.timeout = timeout
        self.pause = pause  # the wait between attempts of a delegation that reached nothing
        self.card_timeout = card_timeout
        self._taken = taken  # the KAOS peers' names
        self._httpx = None
        self._name_all()

    @property
    def complete(self) -> bool:
        return all(peer.card is not None for peer in self._peers)

    def by_name(self) -> dict[str, A2APeer]:
        return {peer.name: peer for peer in self._peers}

    def get(self, name: str) -> A2APeer | None:
        return self.by_name().get(name) or next((peer for peer in self._peers if peer.derived == name), None)

    def describe(self) -> list[dict]:
        return [{"name": peer.name, "description": str((peer.card or {}).get("description") or "")}
                for peer in self._peers]

    def _name_all(self) -> None:
        taken = set(self._taken)
        for peer in self._peers:
            name = peer.card_name if peer.card_name and peer.card_name not in taken else peer.derived
            number = 2
            while name in taken:
                name = f"{peer.derived}-{number}"
                number += 1
            peer.name = name
            taken.add(name)

    async def fetch_missing(self) -> None:
        """Fetch the cards not fetched yet (failures are logged; they are tried again later)."""
        missing = [peer for peer in self._peers if peer.card is None]
        results = await asyncio.gather(*(self._fetch(peer) for peer in missing), return_exceptions=True)
        for peer, result in zip(missing, results):
            if isinstance(result, BaseException):
                log.info("card of A2A peer %s not available yet: %s", peer.url, describe(result))
        self._name_all()

    async def _fetch(self, peer: A2APeer) -> None:
        for url in peer.card_urls:
            try:
                peer.card = await fetch_card(self.http, url, self.card_timeout)
                return
            except CardNotFound:
                if url == peer.card_urls[-1]:
                    raise

    async def delegate(self, peer: A2APeer, task: str, headers: dict[str, str]) -> str:
        """Send ``task`` as one message; the agent's answer, or DelegationError."""
        from a2a.client import ClientCallContext
        from a2a.client.errors import A2AClientError, A2AClientTimeoutError
        from a2a.helpers.proto_helpers import new_text_message
        from a2a.types import Role, SendMessageRequest
        from a2a.utils.errors import A2AError
        from httpx import RequestError

        if peer.card is None:
            try:
                await self._fetch(peer)
            except Exception as error:
                raise DelegationError(f"cannot reach A2A agent {peer.name} at {peer.url}: {describe(error)}") from error
            self._name_all()
        where = f"A2A agent {peer.name} at {peer.url}"
        client = self._client(peer, where)
        request = SendMessageRequest(message=new_text_message(task, role=Role.ROLE_USER))
        context = ClientCallContext(service_parameters=headers, timeout=self.timeout or None)

        async def send():
            answer = None
            async for answer in client.send_message(request, context=context):
                pass
            return answer

        try:
            answer = await retry_unsent(send, _connect_refused, where, self.pause)
        except A2AClientTimeoutError as error:
            raise DelegationError(f"no answer from {where} within {self.timeout:g}s (PEER_TIMEOUT_SECONDS)"
                                  + not_sent_again()) from error
        except A2AClientError as error:
            if _connect_refused(error):
                raise DelegationError(f"cannot reach {where}: {describe(error.__cause__)} "
                                      f"({len(RETRY_DELAYS) + 1} attempts)") from error
            if isinstance(error.__cause__, RequestError):
                raise DelegationError(f"the connection to {where} failed: {describe(error.__cause__)}"
                                      + not_sent_again()) from error
            raise DelegationError(f"{where} failed: {describe(error)}") from error
        except A2AError as error:  # a JSON-RPC error the agent answered with
            raise DelegationError(f"{where} answered with an error: {describe(error)}") from error
        except Exception as error:
            raise DelegationError(f"{where} sent an answer that could not be used: {describe(error)}") from error
        return _answer_text(answer, where)

    def _client(self, peer: A2APeer, where: str):
        if peer.client is None:
            import httpx
            from a2a.client import ClientConfig, ClientFactory
            from a2a.client.card_resolver import parse_agent_card

            if self._httpx is None:
                self._httpx = httpx.AsyncClient(timeout=None)  # each call sets its own (PEER_TIMEOUT_SECONDS)
            try:
                card = parse_agent_card(copy.deepcopy(peer.card))
                peer.client = ClientFactory(ClientConfig(streaming=False, httpx_client=self._httpx)).create(card)
            except Exception as error:
                raise DelegationError(f"the card of {where} offers no usable A2A interface: {describe(error)}") from error
        return peer.client

    async def close(self) -> None:
        if self._httpx is not None:
            await self._httpx.aclose()


def _answer_text(answer, where: str) -> str:
    """The text of a completed task's artifacts, or of a message; DelegationError otherwise."""
    from a2a.helpers.proto_helpers import get_artifact_text, get_message_text
    from a2a.types import TaskState

    kind = answer.WhichOneof("payload") if answer is not None else None
    if kind == "message":
        return get_message_text(answer.message)
    if kind != "task":
        raise DelegationError(f"{where} answered with neither a task nor a message")
    task = answer.task
    said = get_message_text(task.status.message) if task.status.HasField("message") else ""
    if task.status.state != TaskState.TASK_STATE_COMPLETED:
        state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower().replace("_", " ")
        raise DelegationError(f"{where} did not complete the task (state {state})" + (f": {said}" if said else ""))
    return "\n".join(text for text in (get_artifact_text(artifact) for artifact in task.artifacts) if text) or said
