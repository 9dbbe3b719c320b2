"""The platform chart installed on the GitOps tests' own control plane, from any chart reference
(a folder, a packaged .tgz, an oci:// reference)."""

from __future__ import annotations

import json

from kaos.api import SERVED_PLURALS
from tests.cluster.controlplane import ControlPlane
from tests.cluster.platform import NAMESPACE, RELEASE, deployment_available, helm, operator_deployment
from tests.support.polling import wait_until

KAOS_CRDS = tuple(f"{plural}.kaos.tools" for plural in SERVED_PLURALS.values())


def crd(plane: ControlPlane, name: str) -> dict | None:
    return plane.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")


def remove_kaos_crds(plane: ControlPlane) -> None:
    """A cluster that never had KAOS: delete the CRDs (and so every KAOS resource) a test kept."""
    present = [name for name in KAOS_CRDS if crd(plane, name)]
    for name in present:  # resources a stopped operator left with its finalizer would hold their CRD forever
        for item in plane.kubectl_json("get", name, "--all-namespaces").get("items") or []:
            if item["metadata"].get("finalizers"):
                plane.kubectl("patch", name, item["metadata"]["name"], "-n", item["metadata"]["namespace"],
                              "--type", "merge", "-p", '{"metadata": {"finalizers": null}}', check=False)
    if present:
        plane.kubectl("delete", "crd", *present, "--wait=true")
    wait_until(lambda: not any(crd(plane, name) for name in KAOS_CRDS), 60, interval=0.1, what="the KAOS CRDs gone")


PLATFORM_KINDS = "deployment,service,configmap,serviceaccount,role,rolebinding"
CLUSTER_KINDS = "clusterrole,clusterrolebinding"
PLATFORM_SELECTOR = "app.kubernetes.io/part-of=kaos"


def remove_platform(plane: ControlPlane, namespace: str = NAMESPACE) -> None:
    """A cluster that never had KAOS: no CRDs, and none of the platform chart's objects, which a
    Helm release would refuse to adopt when another installer (Argo CD renders without Helm's
    ownership annotations) left them behind."""
    remove_kaos_crds(plane)
    plane.kubectl("delete", PLATFORM_KINDS, "-n", namespace, "-l", PLATFORM_SELECTOR, "--ignore-not-found", "--wait=true")
    plane.kubectl("delete", CLUSTER_KINDS, "-l", PLATFORM_SELECTOR, "--ignore-not-found", "--wait=true")


def wait_operator_available(plane: ControlPlane, namespace: str = NAMESPACE, release: str = RELEASE) -> dict:
    name = operator_deployment(plane, namespace, release)["metadata"]["name"]
    wait_until(lambda: deployment_available(plane, namespace, name), 60, interval=0.1,
               what=f"the operator Deployment {namespace}/{name} Available")
    return operator_deployment(plane, namespace, release)


def release_chart(plane: ControlPlane, namespace: str = NAMESPACE, release: str = RELEASE) -> str:
    """The chart (<name>-<version>) of the release's deployed revision."""
    listed = json.loads(helm(plane, "list", "-n", namespace, "-o", "json").stdout or "[]")
    (item,) = [entry for entry in listed if entry["name"] == release]
    return item["chart"]
