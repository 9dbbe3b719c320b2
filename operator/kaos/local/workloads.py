"""The workloads of `kaos up`: what the kubelet is in a cluster.

For each resource it is given a plan for: its loopback ports, the workload chart rendered
with ``helm template`` (``kaos.helm``), the rendered Deployment's container as one supervised
process per replica, and their logs; and the platform's Redis (``kaos.local.redis_server``)
for the agents that keep their memory in it. A program a workload needs and this environment
lacks is installed with pip first (``kaos.local.programs``), unless KAOS_INSTALL_PROGRAMS=false. It knows nothing of the store or of the
reconcile loop: it is told what to run and whom to call when a process changes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

from kaos.helm import Helm
from kaos.local.containers import CannotRunLocally, LocalProcess, ProgramMissing, local_process
from kaos.local.manifests import CORE_KINDS
from kaos.local.paths import OutsideHome, inside
from kaos.local.ports import LOOPBACK, free_port
from kaos.local.programs import pip_command, pip_install, shown
from kaos.local.redis_server import LocalRedis
from kaos.local.replicas import Replicas
from kaos.reconcile import Plan, Ref
from kaos.settings import variable

log = logging.getLogger("kaos.local")


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


@dataclass
class Workload:
    """What runs for one resource: its rendered objects and its process."""

    values_key: str = ""
    rendered: list[dict] = field(default_factory=list)
    process: LocalProcess | None = None  # the first replica's
    processes: tuple[LocalProcess, ...] = ()
    supervisor: Replicas | None = None


class Workloads(Mapping[Ref, Workload]):
    """The running workloads by resource, and what starts, replaces and stops them."""

    def __init__(self, home: Path, settings, render: Callable | None = None, which: Callable = local_which,
                 install: Callable[[str], Awaitable[str]] | None = None):
        self.home = home
        self.render = render or Helm(settings).render  # (chart, release, namespace, values) -> the rendered objects
        self.which = which
        self.install_programs = settings.install_programs
        # (requirement) -> an error message, or "" once installed
        self.install = install or (lambda requirement: pip_install(requirement, self._base_env))
        self.ports: dict[Ref, int] = {}
        self.replica_ports: dict[Ref, list[int]] = {}
        self._running: dict[Ref, Workload] = {}
        self._base_env = process_base_env()
        self.redis = LocalRedis(home, lambda program: self.which(program), lambda: None, self._base_env)

    def __getitem__(self, ref: Ref) -> Workload:
        return self._running[ref]

    def __iter__(self) -> Iterator[Ref]:
        return iter(self._running)

    def __len__(self) -> int:
        return len(self._running)

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

    # logs

    def log_path(self, namespace: str, deployment: str) -> Path:
        return inside(self.home, "logs", namespace, f"{deployment}.log")

    def deployments(self) -> list[dict]:
        """The local equivalent of `kubectl get deployments` across namespaces."""
        rows = []
        for ref, workload in sorted(self._running.items()):
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

    # running

    async def run(self, ref: Ref, plan: Plan, objects: dict, on_change: Callable[[], None]) -> str:
        """Run what the plan deploys (with the local Redis when its values use it); returns an
        error message, or "" when the process is (being) started. ``objects`` are the namespace's
        Secrets and ConfigMaps; ``on_change`` is called when a process's state changes."""
        return self._ensure_redis(plan.values) or await self._deploy(ref, plan, objects, on_change)

    def _ensure_redis(self, values: dict) -> str:
        """Start the local Redis for an agent whose memory is in it; an error message when it cannot run."""
        memory = values.get("memory") or {}
        if memory.get("backend") == "redis" and (memory.get("redis") or {}).get("url") == self.redis.url:
            return self.redis.ensure()
        return ""

    async def _deploy(self, ref: Ref, plan: Plan, objects: dict, on_change: Callable[[], None]) -> str:
        """Render and run; returns an error message, or "" when the process is (being) started."""
        workload = self._running.setdefault(ref, Workload())
        key = json.dumps([plan.chart, plan.release, plan.values], sort_keys=True, default=str)
        try:
            if key != workload.values_key:
                workload.rendered = await self.render(plan.chart, plan.release, ref.namespace, plan.values)
                workload.values_key = key
            processes = await self._processes_installing(ref, workload.rendered, objects)
            log_path = self.log_path(ref.namespace, processes[0].name if processes else plan.release)
        except (CannotRunLocally, OutsideHome) as error:
            await self.stop(ref)
            return str(error)
        except Exception as error:  # helm's message is what the user needs
            workload.values_key = ""
            await self.stop(ref)
            return f"rendering chart {plan.chart} failed: {error}"
        if processes != workload.processes or workload.supervisor is None:
            if workload.supervisor is not None:
                await workload.supervisor.stop()
            workload.processes, workload.process = processes, (processes[0] if processes else None)
            workload.supervisor = Replicas(processes, self.port_of(ref), log_path, on_change)
            await workload.supervisor.start()
        return ""

    async def _processes_installing(self, ref: Ref, rendered: list[dict], objects: dict) -> tuple[LocalProcess, ...]:
        """The processes, once each missing program's distribution is installed (each tried once)."""
        tried: set[str] = set()
        while True:
            try:
                return self._processes_of(ref, rendered, objects)
            except ProgramMissing as missing:
                command = shown(pip_command(missing.requirement))
                if not self.install_programs:
                    raise CannotRunLocally(f"{missing}; install it with `{command}` "
                                           f"({variable('install_programs')}=false: kaos up installs nothing)") from None
                if missing.requirement in tried:
                    raise CannotRunLocally(f"{missing}, even after `{command}`") from None
                tried.add(missing.requirement)
                log.warning("%s: %s; installing it: %s", ref, missing, command)
                error = await self.install(missing.requirement)
                if error:
                    raise CannotRunLocally(f"{missing}; installing it: {error}") from None
                log.warning("%s: installed %s", ref, missing.requirement)

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
            local_process(deployments[0], objects, port, str(inside(self.home, "volumes", ref.namespace, name)),
                          self.which, self._base_env)
            for port in ports
        )

    async def stop(self, ref: Ref) -> None:
        workload = self._running.pop(ref, None)
        if workload and workload.supervisor:
            await workload.supervisor.stop()

    async def stop_all(self) -> None:
        """Stop every workload and the local Redis."""
        await asyncio.gather(*(self.stop(ref) for ref in list(self._running)))
        await self.redis.stop()
