"""Approvals in Redis (``MEMORY_BACKEND=redis``), beside the agent's memory: every replica sees
them, a decision reaches the process that waits, and a run waiting for one survives a restart.

Keys (``P`` is the memory's key prefix, ``kaos:agent:<AGENT_NAME>`` by default):

- ``P:approval:<id>``  hash: ``record`` (the approval as requested, JSON), ``expires_at``, and
                       once settled ``status``, ``decided_by``, ``decided_at``, ``reason``;
- ``P:approvals``      sorted set: id -> requested time (at most ``MAX_APPROVALS``, oldest dropped);
- the journal of waiting runs (``P:run:...``, ``P:runs``): ``journal.RedisRunJournal``.

A settle is one Lua script (compare-and-set on ``status``) that publishes the id on
``P:approvals:settled``; a waiting process listens there (one subscription per process), and
a decision taken in the same process wakes its waiter directly.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

from redis.exceptions import RedisError

from ..core.redis_client import describe_url, redis_client
from ..core.settings import MemorySettings
from ..memory import MemoryUnavailable
from .journal import RedisRunJournal
from .record import PENDING, Approval
from .store import MAX_APPROVALS, AlreadySettled, ApprovalStore, UnknownApproval, Waiters

log = logging.getLogger("kaos_runtime.approvals")

# A waiter also reads the approval this often, in case a published decision was missed.
RECHECK_SECONDS = 2.0

# KEYS: the approval. ARGV: status, decided_by, decided_at, reason, now ('' : no expiry check),
# channel, id. Returns '' when settled now, else the status it already had ('missing': none).
_SETTLE = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
  status = 'pending'
end
if status ~= 'pending' then return status end
if ARGV[5] ~= '' and tonumber(ARGV[5]) >= tonumber(redis.call('HGET', KEYS[1], 'expires_at')) then
  return 'expired'
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'decided_by', ARGV[2], 'decided_at', ARGV[3], 'reason', ARGV[4])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return ''
"""

# KEYS: the index. ARGV: approval key prefix, limit. Drops the oldest approvals beyond the limit.
_TRIM = """
local extra = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if extra > 0 then
  local dropped = redis.call('ZPOPMIN', KEYS[1], extra)
  for i = 1, #dropped, 2 do redis.call('DEL', ARGV[1] .. dropped[i]) end
end
"""

@asynccontextmanager
async def _reachable(client, what: str):
    """A Redis failure as MemoryUnavailable (the HTTP layer's 503), naming what failed."""
    try:
        yield
    except RedisError as error:
        raise MemoryUnavailable(f"approvals unavailable: Redis at {describe_url(client)} ({what}): "
                                f"{type(error).__name__}: {error}") from None


def _approval_of(fields: dict) -> Approval | None:
    if not fields or "record" not in fields:
        return None
    approval = Approval.from_json(fields["record"])
    status = fields.get("status") or PENDING
    if status == PENDING:
        return approval
    decided_at = fields.get("decided_at")
    return approval.settled(status, fields.get("decided_by") or None, float(decided_at) if decided_at else None,
                            fields.get("reason") or "")


class RedisApprovalStore(ApprovalStore):

    def __init__(self, config: MemorySettings, agent_name: str, limit: int = MAX_APPROVALS) -> None:
        prefix = config.key_prefix or f"kaos:agent:{agent_name}"
        self._approval_prefix = f"{prefix}:approval:"
        self._index = f"{prefix}:approvals"
        self._channel = f"{prefix}:approvals:settled"
        self._limit = limit
        self.client = redis_client(config.redis_url.get_secret_value(), config.redis_timeout)
        self._settle = self.client.register_script(_SETTLE)
        self._trim = self.client.register_script(_TRIM)
        self.journal = RedisRunJournal(self.client, prefix)
        self._waiters = Waiters()
        self._listener: asyncio.Task | None = None
        self._subscribed: asyncio.Future | None = None

    def _key(self, approval_id: str) -> str:
        return self._approval_prefix + approval_id

    async def add(self, approval: Approval) -> None:
        async with _reachable(self.client, "add an approval"), self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self._key(approval.id), mapping={"record": approval.to_json(),
                                                        "expires_at": repr(approval.expires_at)})
            pipe.zadd(self._index, {approval.id: approval.requested_at})
            await pipe.execute()
            await self._trim(keys=[self._index], args=[self._approval_prefix, self._limit])

    async def get(self, approval_id: str) -> Approval | None:
        async with _reachable(self.client, "read an approval"):
            return _approval_of(await self.client.hgetall(self._key(approval_id)))

    async def all(self) -> list[Approval]:
        async with _reachable(self.client, "list approvals"):
            ids = await self.client.zrange(self._index, 0, -1)
            if not ids:
                return []
            async with self.client.pipeline(transaction=False) as pipe:
                for approval_id in ids:
                    pipe.hgetall(self._key(approval_id))
                found = await pipe.execute()
        return [approval for approval in map(_approval_of, found) if approval is not None]

    async def settle(self, approval_id, status, by, at, reason, before_expiry) -> Approval:
        async with _reachable(self.client, "decide an approval"):
            outcome = await self._settle(keys=[self._key(approval_id)], args=[
                status, by or "", repr(at), reason, repr(at) if before_expiry else "", self._channel, approval_id])
        if outcome == "missing":
            raise UnknownApproval(approval_id)
        approval = await self.get(approval_id)
        if approval is None:
            raise UnknownApproval(approval_id)
        if outcome:
            raise AlreadySettled(approval, outcome)
        self._waiters.wake(approval)
        return approval

    async def wait(self, approval_id: str, timeout: float) -> Approval | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0)
        waiter = self._waiters.add(approval_id)
        try:
            await self._subscribe()
            while True:
                approval = await self.get(approval_id)
                if approval is None or approval.status != PENDING:
                    return approval
                left = deadline - loop.time()
                if left <= 0:
                    return None
                try:
                    return await asyncio.wait_for(asyncio.shield(waiter), min(left, RECHECK_SECONDS))
                except asyncio.TimeoutError:
                    continue
        finally:
            self._waiters.discard(approval_id, waiter)

    async def _subscribe(self) -> None:
        """Start the one listener of this process and wait until it is subscribed."""
        if self._listener is None or self._listener.done():
            self._subscribed = asyncio.get_running_loop().create_future()
            self._listener = asyncio.create_task(self._listen(self._subscribed))
        await asyncio.shield(self._subscribed)

    async def _listen(self, subscribed: asyncio.Future) -> None:
        while True:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                if not subscribed.done():
                    subscribed.set_result(None)
                async for message in pubsub.listen():
                    approval_id = message.get("data")
                    if message.get("type") == "message" and approval_id in self._waiters:
                        approval = await self.get(approval_id)
                        if approval is not None and approval.status != PENDING:
                            self._waiters.wake(approval)
            except RedisError as error:  # waiters still re-read every RECHECK_SECONDS
                log.warning("approvals: listening for decisions in Redis failed: %s", error)
                if not subscribed.done():
                    subscribed.set_result(None)
                await asyncio.sleep(RECHECK_SECONDS)
            finally:
                await pubsub.aclose()

    async def close(self) -> None:
        await self.journal.close()
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
        await self.client.aclose()
