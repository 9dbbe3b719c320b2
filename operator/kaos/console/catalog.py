"""Where the console reads the resources from (a Catalog), and how healthy each one looks."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Protocol

from kaos.api import MEMORYSTORE, SERVED_KINDS, TRIGGER, namespace_of

# What the console makes of a resource's status (the front end colours by it).
READY, STARTING, WAITING, DOWN, FAILED = "ready", "starting", "waiting", "down", "failed"


class CatalogError(RuntimeError):
    """The resources cannot be listed; the message says why, in words the user reads."""


class Catalog(Protocol):
    """Lists every Agent, ModelAPI, MCPServer, Trigger and MemoryStore, each as the API holds it (status included)."""

    source: str  # where they come from, shown by the console: "local" or "kubernetes"

    async def resources(self) -> list[dict]: ...


class LocalCatalog:
    """The local control plane's resources, through the function it lists them with.

    ``list_resources()`` returns the stored resources (sync or async); they are copied, never changed.
    """

    source = "local"

    def __init__(self, list_resources: Callable[[], list[dict] | Awaitable[list[dict]]]):
        self._list = list_resources

    async def resources(self) -> list[dict]:
        items = self._list()
        if inspect.isawaitable(items):
            items = await items
        return [dict(item) for item in items]


def key_of(resource: dict) -> tuple[str, str, str]:
    metadata = resource.get("metadata") or {}
    return resource.get("kind", ""), namespace_of(metadata), metadata.get("name", "")


def sort_resources(items: list[dict]) -> list[dict]:
    """ModelAPIs, MCP servers, agents (dependency order), then triggers, each by namespace and name."""
    def order(item: dict):
        kind, namespace, name = key_of(item)
        return (SERVED_KINDS.index(kind) if kind in SERVED_KINDS else len(SERVED_KINDS), namespace, name)
    return sorted(items, key=order)


class Health:
    """Says for each resource whether it is ready, starting, waiting, down or failed.

    "down" is a resource that is not ready although this console saw it Ready before (its
    process or pod stopped answering): the status alone says Pending, as for one that is
    still starting, but for the user the two are not the same.
    """

    def __init__(self) -> None:
        self._was_ready: set[tuple] = set()

    def annotate(self, items: list[dict]) -> list[dict]:
        seen, annotated = set(), []
        for item in items:
            kind, namespace, name = key_of(item)
            key = (kind, namespace, name, (item.get("metadata") or {}).get("uid"))
            seen.add(key)
            status = item.get("status") or {}
            if kind in PHASE_STATES:
                health = _phase_health(status, PHASE_STATES[kind])
            else:
                health = self._health(key, status)
            annotated.append({**item, "health": health})
        self._was_ready &= seen  # a deleted and re-created resource starts afresh
        return annotated

    def _health(self, key: tuple, status: dict[str, Any]) -> dict[str, str]:
        phase = status.get("phase") or "Pending"
        message = status.get("message") or ""
        if status.get("ready"):
            self._was_ready.add(key)
            return {"state": READY, "label": "Ready", "detail": message}
        if phase == "Failed":
            return {"state": FAILED, "label": "Failed", "detail": message}
        if phase == "Waiting":
            return {"state": WAITING, "label": "Waiting", "detail": message or "waiting for its dependencies"}
        if key in self._was_ready:
            return {"state": DOWN, "label": "Down",
                    "detail": "it was Ready and stopped answering" + (f": {message}" if message else "")}
        return {"state": STARTING, "label": phase if phase != "Ready" else "Pending", "detail": message}


class CachedCatalog:
    """Shares one listing between the requests of ``ttl`` seconds (many browsers poll at once)."""

    def __init__(self, catalog: Catalog, ttl: float = 1.0, clock: Callable[[], float] | None = None):
        self.catalog = catalog
        self.source = catalog.source
        self.ttl = ttl
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._at: float | None = None
        self._items: list[dict] = []
        self._lock = asyncio.Lock()

    async def resources(self) -> list[dict]:
        async with self._lock:
            now = self._clock()
            if self._at is None or now - self._at >= self.ttl:
                self._items = await self.catalog.resources()
                self._at = now
            return self._items


# The kinds that run no workload: their phase says it all. A Trigger's Suspended is a choice,
# shown as waiting; a MemoryStore's Degraded (store or embedder unreachable) as down.
PHASE_STATES = {
    TRIGGER: {"Ready": READY, "Failed": FAILED, "Waiting": WAITING, "Suspended": WAITING},
    MEMORYSTORE: {"Ready": READY, "Failed": FAILED, "Waiting": WAITING, "Degraded": DOWN},
}


def _phase_health(status: dict[str, Any], states: dict[str, str]) -> dict[str, str]:
    phase = status.get("phase") or "Pending"
    return {"state": states.get(phase, STARTING), "label": phase, "detail": status.get("message") or ""}
