"""Argo CD against the test control plane: its application controller and repo-server (the
multi-call binary scripts/setup-gitops builds, run as processes outside the cluster the way
upstream runs them locally), a redis-server, Argo CD's CRDs, its settings ConfigMap with the
KAOS health checks (deploy/argocd/kaos-health.yaml), a `default` AppProject and a repository
Secret for the charts in the local OCI registry."""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kaos.local.ports import free_port
from tests.cluster.controlplane import ControlPlane
from tests.cluster.platform import HELM3
from tests.gitops.tools import ROOT, tool
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer

NAMESPACE = "argocd"
HEALTH = ROOT / "deploy" / "argocd" / "kaos-health.yaml"
# An Application's health is its resources' (Argo CD does not assess child Applications by
# default); the app of apps needs it for its sync waves to wait for the platform.
APPLICATION_HEALTH = """\
local health = {status = "Progressing", message = ""}
if obj.status ~= nil and obj.status.health ~= nil and obj.status.sync ~= nil then
  if obj.status.sync.status == "Synced" then
    health.status = obj.status.health.status
  end
  health.message = obj.status.health.message or ""
end
return health
"""


@dataclass
class ArgoCD:
    plane: ControlPlane
    folder: Path
    registry_host: str
    resync_seconds: int = 10
    resync_jitter_seconds: int | None = None  # None: Argo CD's default (up to 60 s added to each resync)
    tracking: str = "annotation"
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    redis: RedisServer | None = None

    def settings(self) -> dict[str, str]:
        data = dict(yaml.safe_load(HEALTH.read_text())["data"])
        data["resource.customizations.health.argoproj.io_Application"] = APPLICATION_HEALTH
        data["application.resourceTrackingMethod"] = self.tracking
        return data

    def install(self) -> None:
        """Argo CD's CRDs, namespace, settings, project and the registry's repository Secret."""
        crds = tool("argocd").parent / "crds"
        self.plane.kubectl("apply", "--server-side", "-f", str(crds))

        def served() -> bool:
            with self.plane.client() as client:
                return all(client.get(f"/apis/argoproj.io/v1alpha1/{plural}").status_code == 200
                           for plural in ("applications", "appprojects"))

        wait_until(served, 60, interval=0.1, what="Argo CD's CRDs served")
        objects = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": NAMESPACE,
             "labels": {"app.kubernetes.io/part-of": "argocd"}}, "data": self.settings()},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-rbac-cm", "namespace": NAMESPACE,
             "labels": {"app.kubernetes.io/part-of": "argocd"}}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "argocd-secret", "namespace": NAMESPACE,
             "labels": {"app.kubernetes.io/part-of": "argocd"}}, "type": "Opaque"},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {
                "name": "kaos-charts", "namespace": NAMESPACE,
                "labels": {"argocd.argoproj.io/secret-type": "repository"}},
             "stringData": {"name": "kaos-charts", "type": "helm", "url": f"{self.registry_host}/charts",
                            "enableOCI": "true", "insecureOCIForceHttp": "true"}},
            {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
             "metadata": {"name": "default", "namespace": NAMESPACE},
             "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                      "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}},
        ]
        self.plane.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objects))

    def set_tracking(self, method: str) -> None:
        self.tracking = method
        self.plane.kubectl("patch", "configmap", "argocd-cm", "-n", NAMESPACE, "--type", "merge",
                           "-p", yaml.safe_dump({"data": {"application.resourceTrackingMethod": method}}))

    def _environment(self, role: str) -> dict[str, str]:
        home = self.folder / "home"
        paths = {name: self.folder / name for name in ("tls", "ssh", "gpg-keys", "gpg-source", "tmp")}
        for path in (home, *paths.values()):
            path.mkdir(parents=True, exist_ok=True)
        binaries = tool("argocd").parent  # argocd and git-verify-wrapper.sh
        return {**os.environ, "ARGOCD_BINARY_NAME": role, "ARGOCD_FAKE_IN_CLUSTER": "true",
                "ARGOCD_GPG_ENABLED": "false", "ARGOCD_TLS_DATA_PATH": str(paths["tls"]),
                "ARGOCD_SSH_DATA_PATH": str(paths["ssh"]), "ARGOCD_GNUPGHOME": str(paths["gpg-keys"]),
                "ARGOCD_GPG_DATA_PATH": str(paths["gpg-source"]), "HOME": str(home), "TMPDIR": str(paths["tmp"]),
                "KUBECONFIG": str(self.plane.admin_kubeconfig),
                # Argo CD renders Helm charts with the helm it finds; it is built against Helm 3.
                "PATH": os.pathsep.join([str(binaries), str(HELM3.parent), os.environ.get("PATH", "")])}

    def _start(self, role: str, *args: str) -> None:
        log = self.folder / f"{role}.log"
        with open(log, "ab") as out:
            process = subprocess.Popen([str(tool("argocd")), *args], env=self._environment(role), cwd=self.folder,
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.processes[role] = process
        self.plane.track(role, process, log)

    def start(self) -> "ArgoCD":
        self.folder.mkdir(parents=True, exist_ok=True)
        self.install()
        self.redis = RedisServer(self.folder / "redis").start()
        redis = f"127.0.0.1:{self.redis.port}"
        repo_port = free_port()
        self._start("argocd-repo-server", "--port", str(repo_port), "--metrics-port", str(free_port()),
                    "--redis", redis, "--disable-tls", "--client-ca-path=", "--address", "127.0.0.1",
                    # how long a branch's resolved commit is cached (default 3 minutes, like the resync)
                    "--revision-cache-expiration", f"{self.resync_seconds}s")
        wait_until(lambda: self._listening(repo_port), 60, interval=0.2, what="the Argo CD repo-server listening")
        jitter = [] if self.resync_jitter_seconds is None else ["--app-resync-jitter", str(self.resync_jitter_seconds)]
        self._start("argocd-application-controller", "--repo-server", f"127.0.0.1:{repo_port}",
                    "--repo-server-plaintext", "--redis", redis, "--namespace", NAMESPACE,
                    "--app-resync", str(self.resync_seconds), *jitter,
                    "--metrics-port", str(free_port()), "--status-processors", "4", "--operation-processors", "4")
        return self

    def _listening(self, port: int) -> bool:
        self.check_running()
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def check_running(self) -> None:
        for role, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"{role} exited with {process.returncode}:\n{self.tail(role)}")

    def tail(self, role: str, lines: int = 40) -> str:
        return "\n".join((self.folder / f"{role}.log").read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if self.redis is not None:
            self.redis.stop()

    # Applications

    def application(self, name: str) -> dict | None:
        return self.plane.get(f"/apis/argoproj.io/v1alpha1/namespaces/{NAMESPACE}/applications/{name}")

    def state(self, name: str) -> tuple[str, str, str]:
        """(sync status, health status, health message) of an Application."""
        status = (self.application(name) or {}).get("status") or {}
        health = status.get("health") or {}
        return (status.get("sync") or {}).get("status", ""), health.get("status", ""), health.get("message", "")

    def wait(self, name: str, sync: str, health: str, timeout: float = 180) -> dict:
        def reached():
            self.check_running()
            return self.state(name)[:2] == (sync, health) and self.application(name)

        try:
            return wait_until(reached, timeout, interval=0.5, what=f"Application {name} {sync} and {health}")
        except AssertionError as timed_out:
            status = (self.application(name) or {}).get("status") or {}
            summary = {key: status.get(key) for key in ("sync", "health", "operationState", "conditions")}
            raise AssertionError(f"{timed_out}; status: {summary}") from None
