"""The reconcile loop of `kaos up`: what the operator is in a cluster.

It watches the resource store, queues each changed resource (and the resources that depend
on it), plans it with ``kaos.reconcile``, has the workloads run the plan and writes the
resulting status back; an MCPServer's status also gets its tools (``kaos.mcp_discovery``).
One asyncio worker reconciles one resource at a time, so there are no races between
reconciles. It also answers the gateway's question: where does a route go now.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from kaos import reconcile
from kaos.api import MEMORYSTORE, TRIGGER
from kaos.backoff import Backoff
from kaos.local.containers import LocalProcess, object_data
from kaos.local.manifests import CORE_KINDS
from kaos.local.store import ResourceStore
from kaos.local.trigger_host import LocalTriggerHost
from kaos.local.workloads import Workloads
from kaos.mcp_discovery import ToolDiscovery
from kaos.memory_probe import MemoryProbes
from kaos.metrics import reconciled, started
from kaos.reconcile import Ref
from kaos.reconcile.memorystore import memory_store_status, probe_target, resolve
from kaos.reconcile.specs import exposed
from kaos.routes import Backend, Route, max_body, route_timeout, unrouted

log = logging.getLogger("kaos.local")

# How long an MCP server that does not answer tools/list is reported with no tools before it is asked again.
TOOLS_RETRY_SECONDS = 5.0


class ReconcileLoop:
    def __init__(self, store: ResourceStore, workloads: Workloads, settings, tools: ToolDiscovery | None = None,
                 memory: MemoryProbes | None = None):
        self.store = store
        self.workloads = workloads
        self.settings = settings
        self.tools = tools or ToolDiscovery(Backoff(base=TOOLS_RETRY_SECONDS, cap=TOOLS_RETRY_SECONDS))
        self._discovering: dict[Ref, asyncio.Task] = {}
        # Told of each status change: (ref, the resource), or (ref, None) once a deleted one has stopped.
        self.listeners: list[Callable[[Ref, dict | None], None]] = []
        self._queue: asyncio.Queue[Ref] = asyncio.Queue()
        self._queued: set[Ref] = set()
        self._worker: asyncio.Task | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.trigger_host = LocalTriggerHost(store, self._write_status)
        # A MemoryStore's status follows its probe's answers: a new answer re-queues it.
        self.memory = memory or MemoryProbes(every=settings.memory_probe_seconds)
        self.memory.on_change = self._enqueue
        store.watch(self._stored)

    def start(self) -> None:
        self._worker = asyncio.create_task(self._work(), name="reconcile")

    async def stop(self) -> None:
        if self._worker:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        for task in list(self._discovering.values()):
            task.cancel()
        await self.trigger_host.close()
        await self.memory.close()

    async def settled(self) -> None:
        """Wait until the reconcile queue is empty (for tests and `kaos up`)."""
        await self._idle.wait()

    # the queue

    def _stored(self, ref: Ref, document: dict | None) -> None:
        """A change in the store: a Secret or ConfigMap touches its namespace's resources; a
        resource is reconciled, and a deleted one's dependents too."""
        if ref.kind in CORE_KINDS:
            if document is not None:
                for other in self.store.in_namespace(ref.namespace):
                    self._enqueue(other)
            return
        if document is None:
            self.tools.forget(ref)
            self._enqueue(ref)
            for dependent in self._dependents(ref):
                self._enqueue(dependent)
            return
        self._enqueue(ref)

    def _enqueue(self, ref: Ref) -> None:
        if ref not in self._queued:
            self._queued.add(ref)
            self._idle.clear()
            self._queue.put_nowait(ref)

    def _dependents(self, ref: Ref) -> list[Ref]:
        return [other for other, resource in self.store.resources.items() if ref in reconcile.dependencies(resource)]

    async def _work(self) -> None:
        while True:
            ref = await self._queue.get()
            self._queued.discard(ref)
            try:
                await self._reconcile(ref)
            except Exception:  # a bug must not stop the control plane; it is logged with the resource
                log.exception("reconcile of %s failed", ref)
            if self._queue.empty():
                self._idle.set()

    # one reconcile

    async def _reconcile(self, ref: Ref) -> None:
        resource = self.store.resources.get(ref)
        if ref.kind == TRIGGER:  # no workload: the trigger engine runs it
            if resource is None:
                self.trigger_host.engine.delete(ref)
                self._notify(ref, None)
            else:
                since = started()
                new_status = self.trigger_host.reconcile(resource)
                self._set_status(ref, resource, new_status)
                reconciled(ref.kind, new_status["phase"], since)
            return
        if ref.kind == MEMORYSTORE:  # no workload: the agents reach the store
            self._reconcile_memory_store(ref, resource)
            return
        if resource is None:
            await self.workloads.stop(ref)
            self._notify(ref, None)
            return
        since = started()
        observed = {dep: self.store.resources.get(dep) for dep in reconcile.dependencies(resource)}
        plan = reconcile.plan(resource, observed, self._plan_settings(), self.workloads.endpoint_of)
        error = ""
        if plan.phase == reconcile.DEPLOY and plan.values is not None:
            error = await self.workloads.run(ref, plan, self.store.objects_in(ref.namespace),
                                             lambda: self._enqueue(ref))
        elif plan.phase != reconcile.WAITING:
            await self.workloads.stop(ref)
        # Waiting keeps a process that already runs, as the operator keeps a deployed release.
        workload = self.workloads.get(ref)
        supervisor = workload.supervisor if workload else None
        if supervisor is None:
            new_status = reconcile.status(resource, plan, None, None)
        else:
            new_status = reconcile.status(resource, plan, supervisor.ready_count, supervisor.count)
            if supervisor.message:  # the restarts, also once it is up again
                new_status["message"] = "; ".join(filter(None, [new_status.get("message"), supervisor.message]))
        if supervisor is not None and supervisor.crash_looping:
            error = (f"crash loop: the process exited {supervisor.exits_before_ready} times without becoming ready "
                     f"(last exit code {supervisor.last_exit}); it is still restarted; see `kaos logs {ref.name}`")
        if error:
            new_status = reconcile.failed(new_status, f"{ref}: {error}")
        if ref.kind == reconcile.MCPSERVER and new_status.get("ready") and new_status.get("endpoint"):
            new_status["tools"] = self._known_tools(ref, new_status["endpoint"], workload and workload.process)
        self._set_status(ref, resource, new_status)
        reconciled(ref.kind, new_status["phase"], since)

    def _reconcile_memory_store(self, ref: Ref, resource: dict | None) -> None:
        """Resolve its models, read the last probe of its store and embedder (kaos.memory_probe asks
        them in the background) and write its status."""
        if resource is None:
            self.memory.forget(ref)
            self._notify(ref, None)
            return
        since = started()
        settings = self._plan_settings()
        observed = {dep: self.store.resources.get(dep) for dep in reconcile.dependencies(resource)}
        resolution = resolve(resource, observed, settings, self.workloads.endpoint_of)
        probe = None
        if not resolution.phase:
            secret = resolution.spec.secret
            data = object_data(self.store.objects_in(ref.namespace), "Secret", secret.name) if secret else None
            target = probe_target(resolution, settings.memory_store_dir, (data or {}).get(secret.key) if secret else None)
            probe = self.memory.known(ref, target)
        new_status = memory_store_status(resource, resolution, probe)
        self._set_status(ref, resource, new_status)
        reconciled(ref.kind, new_status["phase"], since)

    def _plan_settings(self):
        """The settings, with the local Redis as the platform's Redis unless KAOS_MEMORY_REDIS_URL names
        one, and embedded long-term memory in <KAOS_HOME>/data/memory unless KAOS_MEMORY_STORE_DIR says."""
        update = {}
        if not self.settings.memory_redis_url:
            update["memory_redis_url"] = self.workloads.redis.url
        if not self.settings.memory_store_dir:
            update["memory_store_dir"] = str(self.workloads.home / "data" / "memory")
        return self.settings.model_copy(update=update) if update else self.settings

    # status

    def _write_status(self, ref: Ref, new_status: dict) -> None:
        """A status the trigger engine writes now (a run's start or end), through the one writer."""
        resource = self.store.resources.get(ref)
        if resource is not None:
            self._set_status(ref, resource, new_status)

    def _set_status(self, ref: Ref, resource: dict, new_status: dict) -> None:
        old_status = resource.get("status") or {}
        if old_status == new_status:
            return
        resource["status"] = new_status
        self._notify(ref, resource)
        # what dependents read: readiness and endpoint, and what a MemoryStore resolved for its agents
        if ref.kind == MEMORYSTORE or (old_status.get("ready"), old_status.get("phase"), old_status.get("endpoint")) != (
            new_status.get("ready"), new_status.get("phase"), new_status.get("endpoint")
        ):
            for dependent in self._dependents(ref):
                self._enqueue(dependent)

    def _notify(self, ref: Ref, resource: dict | None) -> None:
        for listener in self.listeners:
            listener(ref, resource)

    # tool discovery

    def _known_tools(self, ref: Ref, endpoint: str, process: LocalProcess | None) -> list[str]:
        """The tools discovered for this endpoint and process; discovery runs in the background
        (an unreachable external server must not hold up the reconcile queue) and re-queues the ref
        once it has an answer, or once the server that did not answer is due to be asked again."""
        known = self.tools.known(ref, endpoint, process)
        if known is not None:
            return known
        if ref not in self._discovering:
            self._discovering[ref] = asyncio.create_task(self._discover(ref, endpoint, process), name=f"tools {ref}")
        return []

    async def _discover(self, ref: Ref, endpoint: str, process: LocalProcess | None) -> None:
        try:
            await self.tools.tools(ref, endpoint, process, logger=log)
            await asyncio.sleep(self.tools.retry_in(ref))
        finally:
            self._discovering.pop(ref, None)
        if ref in self.store.resources:
            self._enqueue(ref)

    # the gateway's lookup

    def backend_of(self, route: Route) -> Backend:
        ref = Ref(route.kind, route.namespace, route.name)
        resource = self.store.resources.get(ref)
        if resource is None:
            return Backend(None, 404, f"no {route.kind} {route.name!r} in namespace {route.namespace!r}")
        spec = resource.get("spec") or {}
        if not exposed(resource):
            return Backend(None, 404, f"Agent {route.name!r} is not exposed (agentNetwork.expose: false)")
        why = unrouted(ref.kind, spec, route.path)
        if why is not None:
            return Backend(None, 404, why)
        workload = self.workloads.get(ref)
        supervisor = workload.supervisor if workload else None
        if supervisor is None or not supervisor.ready:
            phase = (resource.get("status") or {}).get("phase", "Pending")
            message = (resource.get("status") or {}).get("message", "")
            return Backend(None, 503, f"{route.kind} {route.name} is not ready (phase {phase}){': ' + message if message else ''}")
        timeout = route_timeout((spec.get("gatewayRoute") or {}).get("timeout"))
        port = supervisor.pick_port()  # the next ready replica
        if port is None:
            return Backend(None, 503, f"{route.kind} {route.name} has no ready replica")
        return Backend(port, timeout=timeout, max_body=max_body(ref.kind))
