"""``LongTermMemory``: what an agent remembers across sessions, and whether it can right now.

Before a turn ``recall`` finds the caller's memories nearest to what they said; after it
``learn`` extracts the turn's durable facts and stores them with their embeddings; the model's
``remember``/``recall`` tools and the HTTP API (``/memory/long-term``) use the same calls.

A store or an embedder that cannot be reached never fails a turn: ``recall`` finds nothing and
``learn`` stores nothing, the failure is logged once per outage, and ``status`` says
``degraded`` with the reason (``/ready`` and ``/memory/long-term/status`` show it, so the control
plane can set the MemoryStore's ``MemoryDegraded``). While degraded, a turn tries again at most
every ``RETRY_SECONDS``, so an unreachable store costs a turn no time-outs in a row. The HTTP
API, which has no answer without the store, raises ``LongTermUnavailable`` (a 503).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable, TypeVar

from .embedder import Embedder, EmbedderUnavailable
from .extraction import Extractor
from .records import Hit, NewMemory, Record, clip, owner_of
from .store import StoreUnavailable, VectorStore, redacted

log = logging.getLogger("kaos_runtime.long_term")

RETRY_SECONDS = 5.0  # while degraded, a turn's recall or learn tries the store again at most this often
DUPLICATE_DISTANCE = 0.04  # a fact this near one the owner has is not stored again
RETENTION_SWEEP_SECONDS = 3600.0
T = TypeVar("T")


class LongTermUnavailable(Exception):
    """The store or the embedder cannot be reached; the message says which and why."""


class LongTermMemory:
    def __init__(self, store: VectorStore, embedder: Embedder, extractor: Extractor, *, scope: str, agent: str,
                 top_k: int, retention_days: int, store_url: str, clock: Callable[[], float] = time.time) -> None:
        self.store, self.embedder, self.extractor = store, embedder, extractor
        self.scope, self.agent, self.top_k, self.retention_days = scope, agent, top_k, retention_days
        self.where = redacted(store_url)
        self.clock = clock
        self.degraded_reason = ""
        self.degraded_since = 0.0
        self._last_failure = 0.0
        self._tasks: set[asyncio.Task] = set()

    def owner(self, principal: str) -> str:
        return owner_of(self.scope, principal, self.agent)

    def status(self) -> dict:
        return {"enabled": True, "status": "degraded" if self.degraded_reason else "ok",
                "reason": self.degraded_reason, "since": self.degraded_since or None,
                "backend": self.store.backend, "store": self.where, "scope": self.scope}

    async def probe(self) -> dict:
        """Try the store and the embedder now; the status after it."""
        try:
            await self._guarded(self._probe())
        except LongTermUnavailable:
            pass
        return self.status()

    async def _probe(self) -> None:
        await self.store.ping()
        await self.embedder.embed(["ping"])

    async def _guarded(self, work: Awaitable[T]) -> T:
        """``work``'s result; a failure marks the memory degraded and is raised as LongTermUnavailable."""
        try:
            result = await work
        except (StoreUnavailable, EmbedderUnavailable) as error:
            self._last_failure = self.clock()
            if not self.degraded_reason:
                log.warning("long-term memory degraded, answering without it: %s", error)
                self.degraded_since = self.clock()
            self.degraded_reason = str(error)
            raise LongTermUnavailable(str(error)) from None
        if self.degraded_reason:
            log.info("long-term memory reachable again")
            self.degraded_reason, self.degraded_since = "", 0.0
        return result

    def _resting(self) -> bool:
        return bool(self.degraded_reason) and self.clock() - self._last_failure < RETRY_SECONDS

    # The turn's calls: never raise.
    async def recall(self, owner: str, query: str) -> list[Hit]:
        if not query.strip() or self._resting():
            return []
        try:
            return await self._guarded(self._search(owner, query, self.top_k))
        except LongTermUnavailable:
            return []

    async def learn(self, owner: str, session_id: str, user_text: str, answer: str) -> list[Record]:
        if self._resting():
            return []
        facts = await self.extractor.facts(user_text, answer)
        if not facts:
            return []
        try:
            return await self._guarded(self._add(owner, facts, session_id, "extraction"))
        except LongTermUnavailable:
            return []

    def in_background(self, work: Awaitable) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("long-term memory: %s", task.exception())

    # The tools' and the HTTP API's calls: raise LongTermUnavailable.
    async def search(self, owner: str, query: str, k: int) -> list[Hit]:
        return await self._guarded(self._search(owner, query, k))

    async def remember(self, owner: str, text: str, session_id: str, source: str) -> list[Record]:
        return await self._guarded(self._add(owner, [clip(text)], session_id, source))

    async def list(self, owner: str, limit: int, offset: int = 0) -> tuple[list[Record], int]:
        return await self._guarded(self.store.list(owner, limit, offset))

    async def forget(self, owner: str, memory_id: str) -> bool:
        return await self._guarded(self.store.delete(owner, memory_id))

    async def forget_all(self, owner: str) -> int:
        return await self._guarded(self.store.delete_all(owner))

    async def _search(self, owner: str, query: str, k: int) -> list[Hit]:
        vector = (await self.embedder.embed([clip(query)]))[0]
        return await self.store.search(owner, vector, k)

    async def _add(self, owner: str, texts: list[str], session_id: str, source: str) -> list[Record]:
        vectors = await self.embedder.embed(texts)
        now = self.clock()
        fresh = []
        for text, vector in zip(texts, vectors):
            nearest = await self.store.search(owner, vector, 1)
            if nearest and nearest[0].distance <= DUPLICATE_DISTANCE:
                continue  # already known
            fresh.append(NewMemory(owner, text, vector, now, session_id, source))
        await self.store.add(fresh)
        return [Record(m.id, m.owner, m.text, m.created_at, m.session_id, m.source) for m in fresh]

    async def sweep(self) -> int:
        """Retention: forget what is older than ``retention_days`` (0: nothing)."""
        if not self.retention_days:
            return 0
        try:
            dropped = await self._guarded(self.store.delete_older(self.clock() - self.retention_days * 86400))
        except LongTermUnavailable:
            return 0
        if dropped:
            log.info("long-term memory: %d memories past their retention of %d days forgotten",
                     dropped, self.retention_days)
        return dropped

    async def keep_sweeping(self) -> None:
        while True:
            await self.sweep()
            await asyncio.sleep(RETENTION_SWEEP_SECONDS)

    async def close(self, grace: float = 5.0) -> None:
        """Let the turns' learning finish (at most ``grace`` seconds), then release the store."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.store.close()
        await self.embedder.close()
        await self.extractor.close()
