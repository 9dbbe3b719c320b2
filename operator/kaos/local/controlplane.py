"""The local control plane: stored resources -> reconcile core -> rendered charts -> processes.

It is the local counterpart of the API server + operator + kubelet: resources are validated
with the CRD schemas, planned by ``kaos.reconcile``, rendered by ``kaos.helm`` and each
rendered Deployment runs as a supervised process on its own loopback port. One asyncio
worker reconciles one resource at a time, so there are no races between reconciles.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kaos import crds, reconcile
from kaos.api import KINDS
from kaos.backoff import Backoff
from kaos.local.containers import LOOPBACK, CannotRunLocally, LocalProcess, local_process
from kaos.local.manifests import CORE_KINDS, ApplyError, apply_order
from kaos.local.ports import free_port
from kaos.local.redis_server import LocalRedis
from kaos.local.replicas import Replicas
from kaos.mcp_discovery import ToolDiscovery
from kaos.metrics import reconciled, started
from kaos.reconcile import Ref
from kaos.routes import Backend, Route, route_timeout

log = logging.getLogger("kaos.local")

# How long an MCP server that does not answer tools/list is reported with no tools before it is asked again.
TOOLS_RETRY_SECONDS = 5.0


def local_which(program: str) -> str | None:
    """Find a program with this interpreter's bin dir (the venv) first on PATH."""
    venv_bin = os.path.dirname(sys.executable)
    return shutil.which(program, path=os.pathsep.join([venv_bin, os.environ.get("PATH", "")]))


def process_base_env() -> dict[str, str]:
    """The environment every process inherits: this one, with the venv's bin first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def validate_documents(documents: list[tuple[dict, str]], crd_dir: Path) -> list[tuple[dict, str]]:
    """Validate every document first (so that a bad file applies nothing), in apply order."""
    validated, problems = [], []
    for document, source in documents:
        try:
            validated.append((validate_document(document, crd_dir), source))
        except ValueError as error:
            problems.append(f"{source}: {error}")
    if problems:
        raise ApplyError("\n".join(problems))
    return sorted(validated, key=lambda item: apply_order(item[0]["kind"]))


def validate_document(document: dict, crd_dir: Path) -> dict:
    if not isinstance(document, dict):
        raise ValueError("a manifest must be a mapping")
    kind = document.get("kind")
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    if kind in CORE_KINDS:
        if document.get("apiVersion") != "v1" or not metadata.get("name"):
            raise ValueError(f"{kind}: needs apiVersion v1 and metadata.name")
        return copy.deepcopy(document)
    if kind not in KINDS:
        raise ValueError(
            f"kind {kind!r} is not supported by `kaos up` (supported: {', '.join((*KINDS, *CORE_KINDS))})"
        )
    return crds.validate(document, crd_dir)


@dataclass
class Workload:
    """What runs for one resource: its rendered objects and its process."""

    values_key: str = ""
    rendered: list[dict] = field(default_factory=list)
    process: LocalProcess | None = None  # the first replica's
    processes: tuple[LocalProcess, ...] = ()
    supervisor: Replicas | None = None


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
        self.settings = settings
        if render is None:
            from kaos.helm import Helm  # pyhelm3: not for the CLI's `kaos apply`, which imports this module

            render = Helm(settings).render
        self.render = render  # (chart, release, namespace, values) -> the rendered objects
        self.which = which
        self.resources: dict[Ref, dict] = {}
        self.sources: dict[Ref, str] = {}
        self.objects: dict[str, dict[tuple[str, str], dict]] = {}  # namespace -> (kind, name) -> object
        self.workloads: dict[Ref, Workload] = {}
        self.ports: dict[Ref, int] = {}
        self.replica_ports: dict[Ref, list[int]] = {}
        self.tools = tools or ToolDiscovery(Backoff(base=TOOLS_RETRY_SECONDS, cap=TOOLS_RETRY_SECONDS))
        self._discovering: dict[Ref, asyncio.Task] = {}
        self.listeners: list[Callable[[Ref, dict | None], None]] = []
        self._queue: asyncio.Queue[Ref] = asyncio.Queue()
        self._queued: set[Ref] = set()
        self._worker: asyncio.Task | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._base_env = process_base_env()
        self.redis = LocalRedis(home, lambda program: self.which(program), lambda: None, self._base_env)

    # lifecycle

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
        await asyncio.gather(*(self._stop_workload(ref) for ref in list(self.workloads)))
        await self.redis.stop()

    # ports and endpoints

    def port_of(self, ref: Ref) -> int:
        if ref not in self.ports:
            self.ports[ref] = free_port()
        return self.ports[ref]

    def _replica_ports(self, ref: Ref, count: int) -> list[int]:
        """A port per replica, stable for the life of the control plane (the workload's own port
        is the balancer's)."""
        ports = self.replica_ports.setdefault(ref, [])
        ports.extend(free_port() for _ in range(count - len(ports)))
        return ports[:count]

    def endpoint_of(self, kind: str, namespace: str, name: str) -> str:
        return f"http://{LOOPBACK}:{self.port_of(Ref(kind, namespace, name))}"

    # the API: apply, delete, read

    def apply(self, documents: list[tuple[dict, str]]) -> list[dict]:
        """Store validated documents and queue their reconcile; returns what changed."""
        results = []
        for document, source in validate_documents(documents, self.settings.crd_dir):
            metadata = document.setdefault("metadata", {})
            namespace = metadata.setdefault("namespace", "default")
            kind, name = document["kind"], metadata["name"]
            if kind in CORE_KINDS:
                self.objects.setdefault(namespace, {})[(kind, name)] = document
                dependents = [ref for ref in self.resources if ref.namespace == namespace]
                results.append({"kind": kind, "namespace": namespace, "name": name, "result": "configured"})
                for ref in dependents:
                    self._enqueue(ref)
                continue
            ref = Ref(kind, namespace, name)
            old = self.resources.get(ref)
            document.pop("status", None)
            if old is None:
                metadata["generation"] = 1
                outcome = "created"
            elif old.get("spec") != document.get("spec"):
                metadata["generation"] = old["metadata"].get("generation", 1) + 1
                document["status"] = old.get("status", {})
                outcome = "configured"
            else:
                document = old
                outcome = "unchanged"
            self.resources[ref] = document
            self.sources[ref] = source
            results.append({"kind": kind, "namespace": namespace, "name": name, "result": outcome})
            self._enqueue(ref)
        return results

    def delete(self, ref: Ref) -> bool:
        if ref.kind in CORE_KINDS:
            return self.objects.get(ref.namespace, {}).pop((ref.kind, ref.name), None) is not None
        if self.resources.pop(ref, None) is None:
            return False
        self.sources.pop(ref, None)
        self.tools.forget(ref)
        self._enqueue(ref)
        for dependent in self._dependents(ref):
            self._enqueue(dependent)
        return True

    def list(self, kind: str | None = None, namespace: str | None = None) -> list[dict]:
        return [
            self.resources[ref]
            for ref in sorted(self.resources, key=lambda r: (KINDS.index(r.kind), r.namespace, r.name))
            if (kind is None or ref.kind == kind) and (namespace is None or ref.namespace == namespace)
        ]

    def deployments(self) -> list[dict]:
        """The local equivalent of `kubectl get deployments` across namespaces."""
        rows = []
        for ref, workload in sorted(self.workloads.items()):
            supervisor = workload.supervisor
            if workload.process is None:
                continue
            rows.append({
                "namespace": ref.namespace,
                "name": workload.process.name,
                "kind": ref.kind,
                "resource": ref.name,
                "replicas": supervisor.count if supervisor else 1,
                "readyReplicas": supervisor.ready_count if supervisor else 0,
                "pid": supervisor.pid if supervisor else None,
                "restarts": supervisor.restarts if supervisor else 0,
                "port": workload.process.port,
                "log": str(self.log_path(ref.namespace, workload.process.name)),
            })
        return rows

    def log_path(self, namespace: str, deployment: str) -> Path:
        return self.home / "logs" / namespace / f"{deployment}.log"

    async def settled(self) -> None:
        """Wait until the reconcile queue is empty (for tests and `kaos up`)."""
        await self._idle.wait()

    # the gateway's view

    def backend_of(self, route: Route) -> Backend:
        ref = Ref(route.kind, route.namespace, route.name)
        resource = self.resources.get(ref)
        if resource is None:
            return Backend(None, 404, f"no {route.kind} {route.name!r} in namespace {route.namespace!r}")
        spec = resource.get("spec") or {}
        if ref.kind == "Agent" and not (spec.get("agentNetwork") or {}).get("expose", True):
            return Backend(None, 404, f"Agent {route.name!r} is not exposed (agentNetwork.expose: false)")
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
        return Backend(port, timeout=timeout)

    # reconcile

    def _enqueue(self, ref: Ref) -> None:
        if ref not in self._queued:
            self._queued.add(ref)
            self._idle.clear()
            self._queue.put_nowait(ref)

    def _dependents(self, ref: Ref) -> list[Ref]:
        return [other for other, resource in self.resources.items() if ref in reconcile.dependencies(resource)]

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

    async def _reconcile(self, ref: Ref) -> None:
        resource = self.resources.get(ref)
        if resource is None:
            await self._stop_workload(ref)
            self._notify(ref, None)
            return
        since = started()
        observed = {dep: self.resources.get(dep) for dep in reconcile.dependencies(resource)}
        plan = reconcile.plan(resource, observed, self._plan_settings(), self.endpoint_of)
        error = ""
        if plan.phase == reconcile.DEPLOY and plan.values is not None:
            error = self._ensure_redis(plan.values) or await self._deploy(ref, plan)
        elif plan.phase != reconcile.WAITING:
            await self._stop_workload(ref)
        # Waiting keeps a process that already runs, as the operator keeps a deployed release.
        workload = self.workloads.get(ref)
        supervisor = workload.supervisor if workload else None
        if supervisor is None:
            new_status = reconcile.status(resource, plan, None, None)
        else:
            new_status = reconcile.status(resource, plan, supervisor.ready_count, supervisor.count)
            if supervisor.message and not supervisor.ready:
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

    def _plan_settings(self):
        """The settings, with the local Redis as the platform's Redis unless KAOS_MEMORY_REDIS_URL names one."""
        if self.settings.memory_redis_url:
            return self.settings
        return self.settings.model_copy(update={"memory_redis_url": self.redis.url})

    def _ensure_redis(self, values: dict) -> str:
        """Start the local Redis for an agent whose memory is in it; an error message when it cannot run."""
        memory = values.get("memory") or {}
        if memory.get("backend") == "redis" and (memory.get("redis") or {}).get("url") == self.redis.url:
            return self.redis.ensure()
        return ""

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
        if ref in self.resources:
            self._enqueue(ref)

    def _set_status(self, ref: Ref, resource: dict, new_status: dict) -> None:
        old_status = resource.get("status") or {}
        if old_status == new_status:
            return
        resource["status"] = new_status
        self._notify(ref, resource)
        if (old_status.get("ready"), old_status.get("phase"), old_status.get("endpoint")) != (
            new_status.get("ready"), new_status.get("phase"), new_status.get("endpoint")
        ):
            for dependent in self._dependents(ref):
                self._enqueue(dependent)

    def _notify(self, ref: Ref, resource: dict | None) -> None:
        for listener in self.listeners:
            listener(ref, resource)

    async def _deploy(self, ref: Ref, plan) -> str:
        """Render and run; returns an error message, or "" when the process is (being) started."""
        workload = self.workloads.setdefault(ref, Workload())
        objects = self.objects.get(ref.namespace, {})
        key = json.dumps([plan.chart, plan.release, plan.values], sort_keys=True, default=str)
        try:
            if key != workload.values_key:
                workload.rendered = await self.render(plan.chart, plan.release, ref.namespace, plan.values)
                workload.values_key = key
            processes = self._processes_of(ref, workload.rendered, objects)
        except CannotRunLocally as error:
            await self._stop_workload(ref)
            return str(error)
        except Exception as error:  # helm's message is what the user needs
            workload.values_key = ""
            await self._stop_workload(ref)
            return f"rendering chart {plan.chart} failed: {error}"
        if processes != workload.processes or workload.supervisor is None:
            if workload.supervisor is not None:
                await workload.supervisor.stop()
            workload.processes, workload.process = processes, (processes[0] if processes else None)
            name = processes[0].name if processes else plan.release
            workload.supervisor = Replicas(processes, self.port_of(ref), self.log_path(ref.namespace, name),
                                           lambda: self._enqueue(ref))
            await workload.supervisor.start()
        return ""

    def _processes_of(self, ref: Ref, rendered: list[dict], namespace_objects: dict) -> tuple[LocalProcess, ...]:
        """One process per replica of the rendered Deployment: the first on the workload's own
        port when it is alone, each on a port of its own behind that port otherwise."""
        objects = dict(namespace_objects)
        deployments = []
        for obj in rendered:
            if obj.get("kind") in CORE_KINDS:
                objects[(obj["kind"], obj["metadata"]["name"])] = obj
            elif obj.get("kind") == "Deployment":
                deployments.append(obj)
        if len(deployments) != 1:
            raise CannotRunLocally(f"the chart rendered {len(deployments)} Deployments; `kaos up` runs exactly one per resource")
        name = deployments[0]["metadata"]["name"]
        replicas = deployments[0].get("spec", {}).get("replicas", 1)
        ports = [self.port_of(ref)] if replicas == 1 else self._replica_ports(ref, replicas)
        return tuple(
            local_process(deployments[0], objects, port, str(self.home / "volumes" / ref.namespace / name),
                          self.which, self._base_env)
            for port in ports
        )

    async def _stop_workload(self, ref: Ref) -> None:
        workload = self.workloads.pop(ref, None)
        if workload and workload.supervisor:
            await workload.supervisor.stop()

