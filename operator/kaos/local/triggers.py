"""The Triggers of `kaos up`: TriggerEngine (kaos.trigger_runner) over the resource store.

The reconcile loop hands it each Trigger it reconciles and writes the status it returns; the
engine's own writes (a run's due time and start before its message is sent, its end) go through
the same writer (``write``), so the loop stays the one writer of status. Agents and Secrets
come from the store. `kaos up` keeps no state across a restart: a Trigger applied again starts
afresh (no due time before it was applied runs).
"""

from __future__ import annotations

import base64
import binascii
from typing import Callable

from kaos.api import AGENT, TRIGGER
from kaos.local.store import ResourceStore
from kaos.reconcile import Ref
from kaos.trigger_runner.engine import TriggerEngine
from kaos.triggers.webhook import Answer, WebhookCall


class Triggers:
    def __init__(self, store: ResourceStore, write: Callable[[Ref, dict], None]):
        self.store = store
        self.write = write
        self.engine = TriggerEngine(self)
        self._generations: dict[Ref, int | None] = {}

    # TriggerHost

    def agent(self, namespace: str, name: str) -> dict | None:
        return self.store.resources.get(Ref(AGENT, namespace, name))

    async def secret(self, namespace: str, name: str, key: str) -> bytes | None:
        secret = self.store.objects_in(namespace).get(("Secret", name))
        if secret is None:
            return None
        if key in (secret.get("stringData") or {}):
            return str(secret["stringData"][key]).encode()
        try:
            return base64.b64decode((secret.get("data") or {})[key], validate=True)
        except (KeyError, binascii.Error, TypeError):
            return None

    async def persist(self, namespace: str, name: str, status: dict) -> bool:
        ref = Ref(TRIGGER, namespace, name)
        if ref not in self.store.resources:
            return False
        self.write(ref, status)
        return True

    # the reconcile loop's side

    def reconcile(self, resource: dict) -> dict:
        """The status of a stored Trigger; a new or changed spec (re)starts its schedule."""
        metadata = resource["metadata"]
        ref = Ref(TRIGGER, metadata.get("namespace") or "default", metadata["name"])
        generation = metadata.get("generation")
        if self._generations.get(ref, -1) != generation:
            self._generations[ref] = generation
            self.engine.apply(resource)
        return self.engine.status(ref.namespace, ref.name)

    def forget(self, ref: Ref) -> None:
        self._generations.pop(ref, None)
        self.engine.delete(ref.namespace, ref.name)

    async def run(self, namespace: str, name: str) -> Answer:
        return await self.engine.fire(namespace, name)

    async def webhook(self, namespace: str, name: str, call: WebhookCall) -> Answer:
        return await self.engine.webhook(namespace, name, call)

    async def close(self) -> None:
        await self.engine.close()
