"""The operator's TriggerHost: TriggerEngine (kaos.trigger_runner) in the operator's process.

kopf tells it of each Trigger (resume, create, update: ``apply``; delete: ``delete``; the engine
takes a spec once per generation); each Trigger's resync timer refreshes its status (its
Agent's readiness, its next run) and reads the run-now annotation ``kaos.tools/run-now`` (for
kubectl users): a value other than the one in status.runNow starts a run and is written there
with it, so a restart does not run it again and a value set while the operator was down still
runs. (A kopf field handler cannot see it: kopf leaves out of its diffs every annotation under
its storage prefix, kaos.tools.) The engine reaches the cluster through ``ClusterTriggerHost``:
Agents from kopf's index, Secrets and status writes through the control side's Kubernetes
client (kaos.kube_api), whose errors say what they are (a Secret the operator may not read is
forbidden, not missing). ``persist`` is the one writer of a Trigger's status: kopf applies a
handler's patch only after the handler returns, too late for a run's due time, which must be
written before its message goes out (see kaos.triggers.tick).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Mapping

from kaos.api import TRIGGER_NAMES
from kaos.kube_api import KubeClient, NotFound
from kaos.operator.status import with_transition_times
from kaos.operator.world import World, plain
from kaos.reconcile import Ref, ref_of
from kaos.trigger_runner.engine import TriggerEngine

log = logging.getLogger("kaos.operator.trigger_host")
RUN_NOW_ANNOTATION = "kaos.tools/run-now"


class ClusterTriggerHost:
    """TriggerHost over the cluster, and the operator's side of the engine."""

    def __init__(self, api: KubeClient) -> None:
        self.api = api
        self.engine = TriggerEngine(self)
        self.world: World | None = None  # kopf's indices, as the latest timer tick passed them
        self._written: dict[Ref, dict] = {}
        self._locks: dict[Ref, asyncio.Lock] = {}

    # TriggerHost

    def agent(self, ref: Ref) -> Mapping | None:
        return self.world.get(ref) if self.world is not None else None

    async def secret(self, namespace: str, name: str, key: str) -> bytes | None:
        """None when the Secret or its key is missing; Forbidden (and other KubeErrors) raised."""
        try:
            return await self.api.secret_value(namespace, name, key)
        except NotFound:
            return None

    async def persist(self, ref: Ref, status: dict) -> bool:
        async with self._locks.setdefault(ref, asyncio.Lock()):
            full = with_transition_times(self._written.get(ref) or {}, status)
            try:
                await self.api.put_status(TRIGGER_NAMES.plural, ref.namespace, ref.name, full)
            except NotFound:  # deleted meanwhile
                return False
            self._written[ref] = full
            return True

    # kopf's side

    def apply(self, body: Mapping) -> Ref:
        ref = ref_of(body)
        self._written.setdefault(ref, dict(body.get("status") or {}))
        self.engine.apply(plain(body))
        return ref

    async def refresh(self, body: Mapping, world: World) -> None:
        """The timer's tick: (re)apply a Trigger kopf has not shown the engine yet, and write its
        status when it differs from the live one."""
        self.world = world
        ref = self.apply(body)
        request = ((body.get("metadata") or {}).get("annotations") or {}).get(RUN_NOW_ANNOTATION)
        started = await self.engine.run_now(ref, request)
        if started is not None:
            log.info("trigger %s/%s: %s=%s: %s %s", ref.namespace, ref.name, RUN_NOW_ANNOTATION, request,
                     started.status, started.body)
        status = self.engine.status(ref)
        live = dict(body.get("status") or {})
        if status is not None and _without_times(with_transition_times(live, status)) != _without_times(live):
            await self.persist(ref, status)

    def delete(self, body: Mapping) -> None:
        ref = ref_of(body)
        self._written.pop(ref, None)
        self._locks.pop(ref, None)
        self.engine.delete(ref)

    async def close(self) -> None:
        await self.engine.close()
        await self.api.close()


def _without_times(status: Mapping) -> dict:
    return {**status, "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                     for c in status.get("conditions") or []]}
