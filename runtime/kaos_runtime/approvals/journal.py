"""The journal of runs waiting for an approval: what a run needs to resume (its snapshot and the
outcomes of the waiting step's actions), held by one process through a lease it renews, so that
a run whose process stopped is claimed and resumed by another (docs/runtime.md, "Approvals").

``RunJournal`` keeps nothing: with approvals in this process a waiting run ends with it.
``RedisRunJournal`` keeps it in Redis beside the approvals (``P`` the memory's key prefix):

- ``P:run:<run>``        hash: ``snapshot`` and ``outcome:<i>``;
- ``P:runs``             set of the runs waiting;
- ``P:run:<run>:owner``  the lease of the process that holds one (``LEASE_SECONDS``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

log = logging.getLogger("kaos_runtime.approvals")

LEASE_SECONDS = 10.0

# KEYS: owner keys. ARGV: this process's token. Deletes those still held by it.
_RELEASE = """
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
"""


class RunJournal:
    durable = False  # waiting runs outlive this process

    async def save_run(self, run_id: str, snapshot: dict) -> None:
        """Keep what a run needs to resume, held by this process (a lease it renews)."""

    async def save_outcome(self, run_id: str, index: int, outcome: dict) -> None:
        """What the ``index``-th action of the waiting step produced (not redone on resume)."""

    async def load_run(self, run_id: str) -> tuple[dict | None, dict[int, dict]]:
        return None, {}

    async def drop_run(self, run_id: str) -> None:
        """The run went past its waiting step (or ended)."""

    async def claim_orphaned_runs(self) -> list[str]:
        """Runs that no live process holds, now held by this one."""
        return []

    async def release_runs(self) -> None:
        """Let go of every run this process holds (it stops; another process resumes them)."""

    async def close(self) -> None:
        """Stop renewing leases (the client belongs to the approval store)."""


class RedisRunJournal(RunJournal):
    durable = True

    def __init__(self, client, prefix: str) -> None:
        self.client = client
        self._run_prefix = f"{prefix}:run:"
        self._runs = f"{prefix}:runs"
        self._release = client.register_script(_RELEASE)
        self._token = uuid.uuid4().hex  # this process, as the holder of leases
        self._held: set[str] = set()  # runs this process holds
        self._heartbeat: asyncio.Task | None = None

    def _owner(self, run_id: str) -> str:
        return f"{self._run_prefix}{run_id}:owner"

    async def save_run(self, run_id: str, snapshot: dict) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self._run_prefix + run_id, "snapshot", json.dumps(snapshot, separators=(",", ":")))
            pipe.sadd(self._runs, run_id)
            pipe.set(self._owner(run_id), self._token, px=int(LEASE_SECONDS * 1000))
            await pipe.execute()
        self._hold(run_id)

    def _hold(self, run_id: str) -> None:
        self._held.add(run_id)
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(self._renew_leases())

    async def _renew_leases(self) -> None:
        from redis.exceptions import RedisError  # here: an agent without Redis never imports redis

        while self._held:
            await asyncio.sleep(LEASE_SECONDS / 3)
            try:
                async with self.client.pipeline(transaction=False) as pipe:
                    for run_id in list(self._held):
                        pipe.pexpire(self._owner(run_id), int(LEASE_SECONDS * 1000))
                    await pipe.execute()
            except RedisError as error:
                log.warning("approvals: renewing the leases of waiting runs failed: %s", error)

    async def save_outcome(self, run_id: str, index: int, outcome: dict) -> None:
        await self.client.hset(self._run_prefix + run_id, f"outcome:{index}", json.dumps(outcome))

    async def load_run(self, run_id: str) -> tuple[dict | None, dict[int, dict]]:
        fields = await self.client.hgetall(self._run_prefix + run_id)
        if "snapshot" not in fields:
            return None, {}
        outcomes = {int(name.split(":", 1)[1]): json.loads(value)
                    for name, value in fields.items() if name.startswith("outcome:")}
        return json.loads(fields["snapshot"]), outcomes

    async def drop_run(self, run_id: str) -> None:
        self._held.discard(run_id)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(self._run_prefix + run_id, self._owner(run_id))
            pipe.srem(self._runs, run_id)
            await pipe.execute()

    async def claim_orphaned_runs(self) -> list[str]:
        claimed = []
        for run_id in await self.client.smembers(self._runs):
            if run_id in self._held:
                continue
            if await self.client.set(self._owner(run_id), self._token, px=int(LEASE_SECONDS * 1000), nx=True):
                self._hold(run_id)
                claimed.append(run_id)
        return claimed

    async def release_runs(self) -> None:
        held, self._held = list(self._held), set()
        if held:
            await self._release(keys=[self._owner(run_id) for run_id in held], args=[self._token])

    async def close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
