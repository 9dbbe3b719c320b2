"""The local control plane: stored resources -> reconcile core -> rendered charts -> processes.

It is the local counterpart of the API server + operator + kubelet, in three parts: the
resource store (``kaos.local.store``), the workloads (``kaos.local.workloads``) and the
reconcile loop that joins them (``kaos.local.reconcile_loop``). This class only puts them
together and answers what the admin API and the console ask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kaos.api import TRIGGER, name_problems
from kaos.local.reconcile_loop import ReconcileLoop
from kaos.local.store import ResourceStore
from kaos.local.workloads import Workloads, local_which
from kaos.mcp_discovery import ToolDiscovery
from kaos.reconcile import Ref
from kaos.routes import Backend, Route
from kaos.triggers.webhook import Answer, WebhookCall


class ControlPlane:
    def __init__(
        self,
        home: Path,
        settings,
        render: Callable | None = None,
        which: Callable = local_which,
        tools: ToolDiscovery | None = None,
    ):
        self.home = home
        self.store = ResourceStore(settings.crd_dir)
        self.workloads = Workloads(home, settings, render, which)
        self.loop = ReconcileLoop(self.store, self.workloads, settings, tools)
        self.listeners = self.loop.listeners

    def start(self) -> None:
        self.loop.start()

    async def stop(self) -> None:
        await self.loop.stop()
        await self.workloads.stop_all()

    async def settled(self) -> None:
        """Wait until the reconcile queue is empty (for tests and `kaos up`)."""
        await self.loop.settled()

    def apply(self, documents: list[tuple[dict, str]]) -> list[dict]:
        """Store validated documents (their reconcile follows); returns what changed."""
        return self.store.apply(documents)

    def delete(self, ref: Ref) -> bool:
        """Whether it was there to delete (a name that is no RFC 1123 name never is)."""
        return self.store.delete(ref)

    def list(self, kind: str | None = None, namespace: str | None = None) -> list[dict]:
        return self.store.list(kind, namespace)

    def deployments(self) -> list[dict]:
        return self.workloads.deployments()

    def backend_of(self, route: Route) -> Backend:
        return self.loop.backend_of(route)

    async def run_trigger(self, namespace: str, name: str) -> Answer:
        """A run of the Trigger now (`kaos trigger run`); 400 for a name no Trigger can have."""
        problems = name_problems(TRIGGER, namespace, name)
        if problems:
            return Answer(400, {"detail": "; ".join(problems)})
        return await self.loop.trigger_host.engine.fire(Ref(TRIGGER, namespace, name))

    async def trigger_webhook(self, namespace: str, name: str, call: WebhookCall) -> Answer:
        """A call to the Trigger's webhook (the gateway's POST /<namespace>/trigger/<name>)."""
        return await self.loop.trigger_host.engine.webhook(Ref(TRIGGER, namespace, name), call)
