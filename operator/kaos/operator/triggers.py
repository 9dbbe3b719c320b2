"""The Triggers of the operator: TriggerEngine (kaos.trigger_runner) in the operator's process.

kopf tells it of each Trigger (resume, create, update: ``apply``; delete: ``delete``); each
Trigger's resync timer refreshes its status (its Agent's readiness, its next run) and reads the
run-now annotation ``kaos.tools/run-now`` (for kubectl users): a value other than the one in
status.runNow starts a run and is written there with it, so a restart does not run it again and
a value set while the operator was down still runs. (A kopf field handler cannot see it: kopf
leaves out of its diffs every annotation under its storage prefix, kaos.tools.) The engine
reaches the cluster through ``ClusterTriggers``: Agents from kopf's index, Secrets and status
writes through ``KubeApi``. ``persist`` is the one writer of a Trigger's status: kopf applies a
handler's patch only after the handler returns, too late for a run's due time, which must be
written before its message goes out (see kaos.triggers.tick). Webhooks are served by
``webhook_app`` on KAOS_TRIGGER_PORT (the platform chart routes /<namespace>/trigger/<name> to it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Mapping

import aiohttp.web

from kaos.api import AGENT, TRIGGER_NAMES
from kaos.operator.kube import KubeApi
from kaos.operator.status import with_transition_times
from kaos.operator.world import World, plain
from kaos.reconcile import Ref
from kaos.routes import parse_trigger_path
from kaos.trigger_runner.engine import TriggerEngine
from kaos.triggers.webhook import MAX_BODY_BYTES, WebhookCall

log = logging.getLogger("kaos.operator.triggers")
RUN_NOW_ANNOTATION = "kaos.tools/run-now"


class ClusterTriggers:
    """TriggerHost over the cluster, and the operator's side of the engine."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.engine = TriggerEngine(self)
        self.world: World | None = None  # kopf's indices, as the latest timer tick passed them
        self._written: dict[tuple[str, str], dict] = {}
        self._generations: dict[tuple[str, str], Any] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    # TriggerHost

    def agent(self, namespace: str, name: str) -> Mapping | None:
        return self.world.get(Ref(AGENT, namespace, name)) if self.world is not None else None

    async def secret(self, namespace: str, name: str, key: str) -> bytes | None:
        return await self.api.secret_value(namespace, name, key)

    async def persist(self, namespace: str, name: str, status: dict) -> bool:
        key = (namespace, name)
        async with self._locks.setdefault(key, asyncio.Lock()):
            full = with_transition_times(self._written.get(key) or {}, status)
            if not await self.api.put_status(TRIGGER_NAMES.plural, namespace, name, full):
                return False
            self._written[key] = full
            return True

    # kopf's side

    def apply(self, body: Mapping) -> None:
        metadata = body["metadata"]
        key = (metadata.get("namespace") or "default", metadata["name"])
        if key not in self._written:
            self._written[key] = dict(body.get("status") or {})
        if self._generations.get(key) != metadata.get("generation"):
            self._generations[key] = metadata.get("generation")
            self.engine.apply(plain(body))

    async def refresh(self, body: Mapping, world: World) -> None:
        """The timer's tick: (re)apply a Trigger kopf has not shown the engine yet, and write its
        status when it differs from the live one."""
        self.world = world
        self.apply(body)
        metadata = body["metadata"]
        namespace, name = metadata.get("namespace") or "default", metadata["name"]
        request = (metadata.get("annotations") or {}).get(RUN_NOW_ANNOTATION)
        started = await self.engine.run_now(namespace, name, request)
        if started is not None:
            log.info("trigger %s/%s: %s=%s: %s %s", namespace, name, RUN_NOW_ANNOTATION, request, started.status,
                     started.body)
        status = self.engine.status(namespace, name)
        live = dict(body.get("status") or {})
        if status is not None and _without_times(with_transition_times(live, status)) != _without_times(live):
            await self.persist(namespace, name, status)

    def delete(self, namespace: str, name: str) -> None:
        self._written.pop((namespace, name), None)
        self._generations.pop((namespace, name), None)
        self.engine.delete(namespace, name)

    async def close(self) -> None:
        await self.engine.close()
        await self.api.close()


def _without_times(status: Mapping) -> dict:
    return {**status, "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                     for c in status.get("conditions") or []]}


def webhook_app(triggers: ClusterTriggers) -> aiohttp.web.Application:
    """POST /<namespace>/trigger/<name>: a Trigger's webhook (kaos.triggers.webhook says what it answers)."""

    async def call(request: aiohttp.web.Request) -> aiohttp.web.Response:
        found = parse_trigger_path(request.path)
        if found is None:
            return aiohttp.web.json_response({"error": "not found", "detail": "POST /<namespace>/trigger/<name>"},
                                             status=404)
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return aiohttp.web.json_response({"detail": f"the body is larger than {MAX_BODY_BYTES} bytes"}, status=413)
        body = await request.content.read(MAX_BODY_BYTES + 1)
        answer = await triggers.engine.webhook(*found, WebhookCall.read(body, request.headers.get))
        return aiohttp.web.json_response(answer.body, status=answer.status, headers=answer.headers)

    app = aiohttp.web.Application(client_max_size=MAX_BODY_BYTES + 1)
    app.router.add_post("/{namespace}/trigger/{name}", call)
    return app

