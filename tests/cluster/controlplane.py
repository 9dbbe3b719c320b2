"""A real Kubernetes control plane on 127.0.0.1 for the cluster test tier.

etcd, kube-apiserver (RBAC authorization, service-account token signing, static admin token),
kube-controller-manager, kube-scheduler and kwok (which plays the kubelet: fake nodes whose
pods become Running and Ready) run as processes in a temporary folder, from the binaries
that ``scripts/setup-kube`` builds. ``stop()`` ends every process it started, with a bounded
wait; ``running()`` says, from /proc, which of them (or what they left behind) still runs.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kaos.local.ports import free_port
from tests.support.launcher.components import Plane, command_lines
from tests.support.launcher.kubeconfig import write_kubeconfig as launcher_kubeconfig
from tests.support.launcher.pki import Pki, create_pki
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml",
              "gateway-api-crds.yaml")
START_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0


class ControlPlaneError(RuntimeError):
    pass


def binaries_dir() -> Path:
    """``$KAOS_KUBE_BIN``, else the newest folder ``scripts/setup-kube`` built under .tools/kube/."""
    explicit = os.environ.get("KAOS_KUBE_BIN")
    candidates = [Path(explicit)] if explicit else sorted((ROOT / ".tools" / "kube").glob("kubernetes-*"))
    for folder in reversed(candidates):
        if all((folder / name).is_file() for name in COMPONENTS):
            return folder
    raise ControlPlaneError(
        f"the test control plane's binaries ({', '.join(COMPONENTS)}) are not built: run scripts/setup-kube"
    )


def write_kubeconfig(path: Path, server: str, ca: Path, token: str, user: str, namespace: str = "default") -> Path:
    """A kubeconfig that signs in with a bearer token."""
    return launcher_kubeconfig(path, server, ca, user, {"token": token}, namespace)


@dataclass
class Component:
    name: str
    process: subprocess.Popen
    log: Path

    @property
    def label(self) -> str:
        return f"{self.name} (pid {self.process.pid})"

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class ControlPlane:
    folder: Path
    bin: Path
    pki: Pki
    server: str
    admin_token: str
    admin_kubeconfig: Path
    components: list[Component] = field(default_factory=list)
    # Every process started for this plane, never forgotten: its components and the operator
    # processes (tests/cluster/platform.py). Each leads a process group of its own.
    started: list[Component] = field(default_factory=list)
    # Seconds from the start of start() to: the apiserver's /readyz, and everything ready.
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def audit_log(self) -> Path:
        """Where the apiserver writes its audit log, when started with ``audit_namespaces``."""
        return self.folder / "logs" / "audit.log"

    # processes

    def _start(self, name: str, argv: list[str]) -> Component:
        log = self.folder / "logs" / f"{name}.log"
        log.parent.mkdir(exist_ok=True)
        with open(log, "wb") as out:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.folder, start_new_session=True,
            )
        component = self.track(name, process, log)
        self.components.append(component)
        return component

    def track(self, name: str, process: subprocess.Popen, log: Path) -> Component:
        """Count a process started with ``start_new_session`` among this plane's: stop() ends it and
        running() watches it and its process group."""
        component = Component(name, process, log)
        self.started.append(component)
        return component

    def _check_alive(self) -> None:
        for component in self.components:
            if component.process.poll() is not None:
                raise ControlPlaneError(
                    f"{component.name} exited with {component.process.returncode}:\n{component.tail()}")

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM the process group of every process started that still runs (last started first),
        wait (bounded) for them all to go, then SIGKILL the groups in which anything is left and wait again."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = self._left()
            if not left:
                return
            for component in reversed(left):
                _signal_group(component.process.pid, sig)
            self.wait_gone(timeout)

    def running(self) -> list[str]:
        """``name (pid N)`` of each process started that still runs, or whose process group still holds
        a process that runs (one it left behind), read from /proc; a zombie has stopped running."""
        return [c.label for c in self._left()]

    def _left(self) -> list[Component]:
        groups = {stat.pgrp for stat in process_stats() if stat.state != "Z"}
        return [c for c in self.started if c.process.poll() is None or c.process.pid in groups]

    def wait_gone(self, timeout: float = STOP_TIMEOUT) -> list[str]:
        """Wait up to ``timeout`` seconds until running() is empty, on pidfds (woken by each exit,
        no sleep); return running() then."""
        deadline = time.monotonic() + timeout
        while (left := self._left()) and (remaining := deadline - time.monotonic()) > 0:
            groups = {c.process.pid for c in left}
            pids = {c.process.pid for c in left if c.process.returncode is None}
            pids |= {stat.pid for stat in process_stats() if stat.pgrp in groups and stat.state != "Z"}
            descriptors = []
            try:
                for pid in pids:
                    try:
                        descriptors.append(os.pidfd_open(pid))
                    except ProcessLookupError:
                        pass  # already gone
                if descriptors:
                    select.select(descriptors, [], [], remaining)
            finally:
                for descriptor in descriptors:
                    os.close(descriptor)
        return [c.label for c in left]

    # the API

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.server, verify=ssl.create_default_context(cafile=self.pki.ca_cert), timeout=30,
                            headers={"Authorization": f"Bearer {token or self.admin_token}"})

    def get(self, path: str) -> dict[str, Any] | None:
        """GET an API path as admin; None on 404."""
        with self.client() as client:
            response = client.get(path)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    def kubectl(self, *args: str, input: str | None = None, kubeconfig: Path | None = None,
                check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [kubectl_executable(), "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), *args],
            input=input, capture_output=True, text=True, timeout=120,
        )
        if check and result.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def kubectl_json(self, *args: str) -> dict[str, Any]:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def create_token(self, namespace: str, service_account: str, seconds: int = 3600) -> str:
        """A token for the ServiceAccount from the TokenRequest API (what a pod's projected volume holds)."""
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": seconds}}
        with self.client() as client:
            response = client.post(
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token", json=request)
        response.raise_for_status()
        return response.json()["status"]["token"]

    def install_gateway_api(self) -> None:
        """The Gateway API's standard CRDs (HTTPRoute and friends), Established."""
        self.kubectl("apply", "--server-side", "-f", str(self.bin / "gateway-api-crds.yaml"))

        def established() -> bool:
            # not `kubectl wait`: it fails at once on a CRD whose status has no conditions yet
            crd = self.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/httproutes.gateway.networking.k8s.io")
            return condition_true(crd, "Established")

        wait_until(established, 60, interval=0.1, what="the HTTPRoute CRD Established")

    def add_node(self, name: str) -> None:
        """A fake node that kwok manages: pods scheduled to it become Running and Ready."""
        node = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "type": "kwok"}},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "250"},
                       "capacity": {"cpu": "32", "memory": "256Gi", "pods": "250"}},
        }
        self.kubectl("apply", "-f", "-", input=json.dumps(node))

        def node_ready() -> bool:
            self._check_alive()
            return condition_true(self.get(f"/api/v1/nodes/{name}"), "Ready")

        wait_until(node_ready, START_TIMEOUT, interval=0.1, what=f"node {name} Ready")


def condition_true(obj: dict[str, Any] | None, kind: str) -> bool:
    """Whether the object's status has condition ``kind`` with status True."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def kubectl_executable() -> str:
    local = ROOT / ".tools" / "bin" / "kubectl"
    return str(local) if local.is_file() else (shutil.which("kubectl") or "kubectl")


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


@dataclass(frozen=True)
class ProcessStat:
    """The fields of /proc/<pid>/stat this tier reads (proc(5)); times in seconds."""

    pid: int
    state: str
    pgrp: int
    cpu: float  # utime + stime
    children_cpu: float  # cutime + cstime: children it has waited for


TICKS = os.sysconf("SC_CLK_TCK")


def process_stats() -> list[ProcessStat]:
    """Every process /proc lists (one that ends while being read is left out)."""
    stats = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                text = handle.read()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()  # fields 3 onwards; the name (field 2) may hold spaces
        stats.append(ProcessStat(int(entry.name), fields[0], int(fields[2]),
                                 (int(fields[11]) + int(fields[12])) / TICKS,
                                 (int(fields[13]) + int(fields[14])) / TICKS))
    return stats


# Benchmarks only (benchmarks/cluster_bench.py): the apiserver logs one line per request of a
# ServiceAccount of these namespaces (the operator's), so its requests can be counted by verb,
# resource and client (kopf or helm, by user agent).
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  userGroups: [{groups}]
- level: None
"""


def start(folder: Path | None = None, nodes: int = 1, audit_namespaces: tuple[str, ...] = ()) -> ControlPlane:
    """Start the whole control plane and return once the apiserver, the controllers and the nodes are ready.

    With ``audit_namespaces``, the apiserver writes an audit log (``plane.audit_log``) of the
    requests the ServiceAccounts of those namespaces make."""
    began = time.monotonic()
    bin = binaries_dir()
    folder = Path(folder or tempfile.mkdtemp(prefix="kaos-cluster-"))
    pki = create_pki(folder / "pki")
    admin_token = secrets.token_hex(24)
    (folder / "tokens.csv").write_text(f'{admin_token},kaos-admin,kaos-admin,"system:masters"\n')
    (folder / "tokens.csv").chmod(0o600)
    etcd_port, etcd_peer_port, api_port = free_port(), free_port(), free_port()
    server = f"https://127.0.0.1:{api_port}"
    admin = write_kubeconfig(folder / "admin.kubeconfig", server, pki.ca_cert, admin_token, "kaos-admin")
    plane = ControlPlane(folder, bin, pki, server, admin_token, admin)
    audit: list[str] = []
    if audit_namespaces:
        groups = ", ".join(f'"system:serviceaccounts:{namespace}"' for namespace in audit_namespaces)
        (folder / "audit-policy.yaml").write_text(AUDIT_POLICY.format(groups=groups))
        audit = [f"--audit-policy-file={folder / 'audit-policy.yaml'}", f"--audit-log-path={plane.audit_log}",
                 "--audit-log-format=json"]
    try:
        _start_components(plane, etcd_port, etcd_peer_port, api_port, began, audit)
        for index in range(nodes):
            plane.add_node(f"kwok-node-{index}")
        plane.timings["ready"] = time.monotonic() - began
    except BaseException:
        plane.stop()
        raise
    return plane


def _start_components(plane: ControlPlane, etcd_port: int, etcd_peer_port: int, api_port: int, began: float,
                      audit: list[str]) -> None:
    bin, folder = plane.bin, plane.folder
    kubeconfig = plane.admin_kubeconfig
    lines = command_lines(Plane(
        node="kwok", bin=bin, pki=plane.pki.ca_cert.parent, etcd_data=folder / "etcd", etcd_port=etcd_port,
        etcd_peer_port=etcd_peer_port, api_port=api_port, bind_address="127.0.0.1", advertise_address="127.0.0.1",
        controller_kubeconfig=kubeconfig, scheduler_kubeconfig=kubeconfig, name="kaos-test",
        apiserver_extra=(f"--token-auth-file={folder / 'tokens.csv'}", *audit)))
    plane._start("etcd", lines["etcd"])
    plane._start("kube-apiserver", lines["kube-apiserver"])

    def apiserver_ready() -> bool:
        plane._check_alive()
        try:
            with plane.client() as client:
                return client.get("/readyz").status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(apiserver_ready, START_TIMEOUT, interval=0.05, what="kube-apiserver /readyz")
    plane.timings["apiserver"] = time.monotonic() - began

    plane._start("kube-controller-manager", lines["kube-controller-manager"])
    plane._start("kube-scheduler", lines["kube-scheduler"])
    plane._start("kwok", [
        str(bin / "kwok"), f"--kubeconfig={kubeconfig}", f"--config={bin / 'kwok-stages.yaml'}",
        "--manage-all-nodes=true", "--node-lease-duration-seconds=40", f"--server-address=127.0.0.1:{free_port()}",
    ])

    def default_service_account() -> bool:
        plane._check_alive()
        return plane.get("/api/v1/namespaces/default/serviceaccounts/default") is not None

    wait_until(default_service_account, START_TIMEOUT, interval=0.1,
               what="the controller-manager to create the default ServiceAccount")
