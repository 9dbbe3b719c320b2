"""The TriggerHost of `kaos up`: TriggerEngine (kaos.trigger_runner) over the resource store.

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

from kaos.local.store import ResourceStore
from kaos.reconcile import Ref, ref_of
from kaos.trigger_runner.engine import TriggerEngine


class LocalTriggerHost:
    def __init__(self, store: ResourceStore, write: Callable[[Ref, dict], None]):
        self.store = store
        self.write = write
        self.engine = TriggerEngine(self)

    # TriggerHost

    def agent(self, ref: Ref) -> dict | None:
        return self.store.resources.get(ref)

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

    async def persist(self, ref: Ref, status: dict) -> bool:
        if ref not in self.store.resources:
            return False
        self.write(ref, status)
        return True

    # the reconcile loop's side

    def reconcile(self, resource: dict) -> dict:
        """The status of a stored Trigger (the engine takes a new or changed spec)."""
        self.engine.apply(resource)
        return self.engine.status(ref_of(resource))

    async def close(self) -> None:
        await self.engine.close()
