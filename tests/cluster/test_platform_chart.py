"""`helm install kaos charts/kaos` against a real kube-apiserver: CRDs Established, RBAC, the
settings ConfigMap and the operator Deployment Available on a kwok node."""

from __future__ import annotations

import json

from kaos.api import API_VERSION, SERVED_PLURALS
from tests.cluster.platform import (
    HELM3,
    NAMESPACE,
    RELEASE,
    deployment_available,
    helm,
    install_platform,
    releases,
    resource,
    start_operator,
    wait_ready,
)
from tests.support.polling import wait_until

KAOS_CRDS = tuple(f"{plural}.kaos.tools" for plural in SERVED_PLURALS.values())


def _condition(obj: dict, kind: str) -> str | None:
    return next((c["status"] for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def test_crds_are_established_so_structural_and_valid(cluster, platform):
    for name in KAOS_CRDS:
        crd = wait_until(lambda: (lambda c: c if _condition(c or {}, "Established") == "True" else None)(
            cluster.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")), 30, what=f"{name} Established")
        assert _condition(crd, "NamesAccepted") == "True"
        assert _condition(crd, "NonStructuralSchema") in (None, "False"), crd["status"]["conditions"]
        served = [v["name"] for v in crd["spec"]["versions"] if v["served"]]
        assert served == ["v1alpha1"]
        assert "status" in crd["spec"]["versions"][0]["subresources"]


def test_rbac_configmap_and_operator_deployment_installed(cluster, platform):
    labels = f"app.kubernetes.io/instance={RELEASE}"
    cluster_roles = cluster.kubectl_json("get", "clusterroles", "-l", labels)["items"]
    assert len(cluster_roles) >= 2
    bindings = cluster.kubectl_json("get", "clusterrolebindings", "-l", labels)["items"]
    service_account = platform["spec"]["template"]["spec"]["serviceAccountName"]
    assert all(
        any(s["kind"] == "ServiceAccount" and s["name"] == service_account and s["namespace"] == NAMESPACE
            for s in binding["subjects"]) for binding in bindings
    ) and bindings
    assert cluster.get(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{service_account}")
    settings = platform["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]
    data = cluster.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{settings}")["data"]
    assert data["KAOS_NETWORK_POLICY_ENABLED"] == "true" and data["KAOS_GATEWAY_ENABLED"] == "true"


def test_operator_pod_runs_on_a_kwok_node(cluster, platform):
    assert deployment_available(cluster, NAMESPACE, platform["metadata"]["name"])
    selector = ",".join(f"{k}={v}" for k, v in platform["spec"]["selector"]["matchLabels"].items())
    pods = cluster.kubectl_json("get", "pods", "-n", NAMESPACE, "-l", selector)["items"]
    assert pods and all(pod["spec"]["nodeName"].startswith("kwok-node-") for pod in pods)
    assert all(pod["status"]["phase"] == "Running" for pod in pods)
    # The pod's securityContext passed the real admission chain as rendered.
    assert pods[0]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_helm3_installs_the_chart_namespaced(cluster, platform):
    """Helm 3 once: a second release, watching one namespace, next to the Helm 4 one."""
    # (the namespaced operator runs in test_a_namespaced_operator_reconciles_only_its_namespace)
    watched = "kaos-h3-watched"
    cluster.kubectl("create", "namespace", watched)
    deployment = install_platform(cluster, "--set", f"watchNamespaces[0]={watched}",
                                  release="kaos-h3", namespace="kaos-h3", executable=HELM3)
    try:
        version = helm(cluster, "version", "--short", executable=HELM3).stdout
        assert version.startswith("v3.")
        bindings = cluster.kubectl_json("get", "rolebindings", "-n", watched, "-l", "app.kubernetes.io/instance=kaos-h3")
        assert bindings["items"], "watchNamespaces gives a RoleBinding in each watched namespace"
        assert deployment_available(cluster, "kaos-h3", deployment["metadata"]["name"])
        token = cluster.create_token("kaos-h3", deployment["spec"]["template"]["spec"]["serviceAccountName"])
        with cluster.client(token) as client:
            assert client.get(f"/api/v1/namespaces/{watched}/secrets").status_code == 200
            assert client.get(f"/apis/kaos.tools/v1alpha1/namespaces/{watched}/agents").status_code == 200
            # Not granted when watchNamespaces is set: Secrets and resources anywhere else.
            assert client.get("/api/v1/namespaces/kube-system/secrets").status_code == 403
            assert client.get("/apis/kaos.tools/v1alpha1/namespaces/default/agents").status_code == 403
    finally:
        helm(cluster, "uninstall", "kaos-h3", "-n", "kaos-h3", executable=HELM3)


def test_a_namespaced_operator_reconciles_only_its_namespace(cluster, platform, operator):
    """watchNamespaces: the operator runs namespaced (kopf's per-namespace watches) under
    RoleBindings only, reconciles its namespace and nothing else."""
    watched, other = "kaos-ns-watched", "kaos-ns-other"
    for name in (watched, other):
        cluster.kubectl("create", "namespace", name)
    install_platform(cluster, "--set", f"watchNamespaces[0]={watched}", release="kaos-ns", namespace="kaos-ns")
    operator.stop()  # the cluster-wide one would reconcile the same resources
    namespaced = start_operator(cluster, namespace="kaos-ns", release="kaos-ns", name="operator-namespaced")
    try:
        manifests = [
            {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "llm"},
             "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}}},
            {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "solo"},
             "spec": {"modelAPI": "llm", "model": "gpt-4o-mini"}},
        ]
        for name in (other, watched):
            cluster.kubectl("apply", "--server-side", "-n", name, "-f", "-",
                            input="\n---\n".join(json.dumps(m) for m in manifests))
        wait_ready(cluster, "Agent", "solo", watched)
        assert "agent-solo" in releases(cluster, watched)
        assert not (resource(cluster, "Agent", "solo", other) or {}).get("status")
        assert releases(cluster, other) == {}
        log = namespaced.tail(10_000).lower()
        assert "forbidden" not in log and '"severity": "error"' not in log
    finally:
        namespaced.stop()
        operator.restart()
        helm(cluster, "uninstall", "kaos-ns", "-n", "kaos-ns")
