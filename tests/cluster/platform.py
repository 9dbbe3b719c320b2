"""The KAOS platform on the test control plane: the platform chart installed with Helm, and the
operator run as a process outside the cluster under the chart's own ServiceAccount.

The operator process gets exactly what its container would: the settings ConfigMap as env,
a token of the chart's ServiceAccount (from the TokenRequest API), its namespace. Only the
charts folder points at this checkout instead of the image's copy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from kaos.api import API_VERSION, PLURALS
from kaos.local.ports import free_port
from tests.cluster.controlplane import ROOT, ControlPlane, condition_true, write_kubeconfig
from tests.support.polling import wait_until

CHARTS = ROOT / "charts"
HELM4 = ROOT / ".tools" / "bin" / "helm"
HELM3 = ROOT / ".tools" / "helm3" / "helm"
RELEASE = "kaos"
NAMESPACE = "kaos-system"


def helm(plane: ControlPlane, *args: str, executable: Path = HELM4, kubeconfig: Path | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig or plane.admin_kubeconfig),
           "HELM_CACHE_HOME": str(plane.folder / "helm" / "cache"),
           "HELM_CONFIG_HOME": str(plane.folder / "helm" / "config"),
           "HELM_DATA_HOME": str(plane.folder / "helm" / "data")}
    result = subprocess.run([str(executable), *args], capture_output=True, text=True, env=env, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def operator_deployment(plane: ControlPlane, namespace: str = NAMESPACE, release: str = RELEASE) -> dict:
    items = plane.kubectl_json(
        "get", "deployments", "-n", namespace, "-l",
        f"app.kubernetes.io/instance={release},app.kubernetes.io/component=operator")["items"]
    assert len(items) == 1, f"expected one operator Deployment in {namespace}, found {len(items)}"
    return items[0]


def deployment_available(plane: ControlPlane, namespace: str, name: str) -> bool:
    return condition_true(plane.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"), "Available")


def install_platform(plane: ControlPlane, *args: str, release: str = RELEASE, namespace: str = NAMESPACE,
                     executable: Path = HELM4) -> dict:
    """``helm install <release> charts/kaos``; returns the operator Deployment once it is Available.

    A second platform release in the cluster leaves the CRDs to the release that installed them
    (crds.enabled=false), as docs/gitops.md says for one operator per namespace."""
    if plane.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/agents.kaos.tools"):
        args = ("--set", "crds.enabled=false", *args)
    helm(plane, "install", release, str(CHARTS / "kaos"), "--namespace", namespace, "--create-namespace",
         *args, executable=executable)
    name = operator_deployment(plane, namespace, release)["metadata"]["name"]
    wait_until(lambda: deployment_available(plane, namespace, name), 60, interval=0.1,
               what=f"the operator Deployment {namespace}/{name} Available")

    def storage_ready() -> bool:
        # Established CRDs answer 429 "storage is (re)initializing" until their watch cache is up.
        with plane.client() as client:
            return all(client.get(f"/apis/{API_VERSION}/{plural}").status_code == 200 for plural in PLURALS.values())

    wait_until(storage_ready, 60, interval=0.1, what="the kaos.tools resources served")
    return operator_deployment(plane, namespace, release)


@dataclass
class Operator:
    """``kaos-operator`` as a process, with the identity and settings of the chart's Deployment."""

    plane: ControlPlane
    process: subprocess.Popen
    log: Path
    health_url: str
    kubeconfig: Path
    service_account: str
    token: str
    namespace: str = NAMESPACE
    release: str = RELEASE
    name: str = "operator"
    trigger_url: str = ""  # where it serves Triggers' webhooks: POST <trigger_url>/<namespace>/trigger/<name>

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

    def restart(self) -> None:
        """Stop this process and start a new one with the same identity (a new pod would)."""
        self.stop()
        replacement = start_operator(self.plane, self.namespace, self.release, name=f"{self.name}-restarted")
        self.__dict__.update(replacement.__dict__)

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def start_operator(plane: ControlPlane, namespace: str = NAMESPACE, release: str = RELEASE,
                   name: str = "operator", charts_dir: Path = CHARTS, extra_env: dict[str, str] | None = None) -> Operator:
    """``extra_env``: variables over the container's (benchmarks: another checkout's code, a helm that counts its runs)."""
    deployment = operator_deployment(plane, namespace, release)
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        config_map = plane.get(f"/api/v1/namespaces/{namespace}/configmaps/{source['configMapRef']['name']}")
        env.update(config_map.get("data") or {})
    for variable in container.get("env") or []:
        if "value" in variable:
            env[variable["name"]] = variable["value"]
        elif variable.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[variable["name"]] = namespace
    service_account = pod["serviceAccountName"]
    token = plane.create_token(namespace, service_account)
    kubeconfig = write_kubeconfig(plane.folder / f"{name}.kubeconfig", plane.server, plane.pki.ca_cert, token,
                                  f"system:serviceaccount:{namespace}:{service_account}", namespace)
    home = plane.folder / f"{name}-home"
    home.mkdir(exist_ok=True)
    port, trigger_port = free_port(), free_port()
    env.update({
        "KAOS_CHARTS_DIR": str(charts_dir),  # the image's copy of the charts: this checkout's charts/
        "KAOS_HEALTH_HOST": "127.0.0.1", "KAOS_HEALTH_PORT": str(port), "KAOS_METRICS_PORT": str(free_port()),
        "KAOS_TRIGGER_PORT": str(trigger_port),  # every operator of a test run listens for webhooks on a port of its own
        "HOME": str(home), "KUBECONFIG": str(kubeconfig),
        "PATH": f"{HELM4.parent}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **(extra_env or {}),
    })
    log = plane.folder / "logs" / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kaos.operator"], env=env, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, cwd=home, start_new_session=True,
        )
    plane.track(name, process, log)  # the plane's stop() and running() cover it and the helm it runs
    operator = Operator(plane, process, log, f"http://127.0.0.1:{port}/healthz", kubeconfig, service_account, token,
                        namespace, release, name, f"http://127.0.0.1:{trigger_port}")

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the operator exited with {process.returncode}:\n{operator.tail()}")
        try:
            return httpx.get(operator.health_url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(healthy, 60, interval=0.1, what="the operator's /healthz")
    return operator


# resources


def apply(plane: ControlPlane, namespace: str, *documents: dict) -> None:
    """``kubectl apply`` of each document (a dict) in the namespace."""
    for document in documents:
        plane.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(document))


def resource(plane: ControlPlane, kind: str, name: str, namespace: str) -> dict | None:
    return plane.get(f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURALS[kind]}/{name}")


def ready(plane: ControlPlane, kind: str, name: str, namespace: str) -> dict | None:
    """The resource once it is Ready for its current generation, else None."""
    found = resource(plane, kind, name, namespace) or {}
    status = found.get("status") or {}
    if status.get("phase") == "Failed":
        raise AssertionError(f"{kind} {namespace}/{name} is Failed: {status.get('message')}")
    current = status.get("observedGeneration") == found.get("metadata", {}).get("generation")
    return found if status.get("phase") == "Ready" and status.get("ready") and current else None


def wait_ready(plane: ControlPlane, kind: str, name: str, namespace: str, timeout: float = 60) -> dict:
    try:
        return wait_until(lambda: ready(plane, kind, name, namespace), timeout, interval=0.1,
                          what=f"{kind} {namespace}/{name} Ready")
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; the namespace holds {statuses(plane, namespace)}") from None


def statuses(plane: ControlPlane, namespace: str) -> dict[str, dict]:
    """Every KAOS resource and Deployment of the namespace with its status (for failure messages)."""
    found = {}
    for kind, plural in PLURALS.items():
        listed = plane.get(f"/apis/{API_VERSION}/namespaces/{namespace}/{plural}") or {}
        for item in listed.get("items", []):
            meta = item["metadata"]
            found[f"{kind} {meta['name']}"] = {"generation": meta.get("generation"),
                                               "finalizers": meta.get("finalizers"), **(item.get("status") or {})}
    deployments = plane.get(f"/apis/apps/v1/namespaces/{namespace}/deployments") or {}
    for item in deployments.get("items", []):
        status = item.get("status") or {}
        found[f"Deployment {item['metadata']['name']}"] = {
            "replicas": status.get("replicas"), "readyReplicas": status.get("readyReplicas"),
            "observedGeneration": status.get("observedGeneration"), "generation": item["metadata"].get("generation")}
    return found


def releases(plane: ControlPlane, namespace: str) -> dict[str, int]:
    """Helm releases in the namespace: name -> revision."""
    listed = json.loads(helm(plane, "list", "-n", namespace, "-o", "json").stdout or "[]")
    return {item["name"]: int(item["revision"]) for item in listed}


def apply_server_side(plane: ControlPlane, path: Path | str, namespace: str, manager: str = "argocd-controller",
                      kubeconfig: Path | None = None) -> str:
    """``kubectl apply --server-side`` as Argo CD does (its own field manager)."""
    return plane.kubectl("apply", "--server-side", f"--field-manager={manager}", "-n", namespace,
                         "-f", str(path), kubeconfig=kubeconfig).stdout
