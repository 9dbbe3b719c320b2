"""The charts as OCI artifacts: scripts/package-charts pushes them to a local registry, and the
platform chart installs from it as the README says (helm install kaos oci://<registry>/charts/kaos)."""

from __future__ import annotations

import pytest

from kaos.api import API_VERSION, PLURALS
from tests.cluster.platform import NAMESPACE, RELEASE, helm
from tests.gitops.platform import KAOS_CRDS, crd, release_chart, remove_platform, wait_operator_available
from tests.support.polling import wait_until

pytestmark = pytest.mark.cluster


def test_every_chart_is_in_the_registry_at_its_version(registry, published):
    for chart, version in published.items():
        assert version in registry.tags(f"charts/{chart}"), chart


def test_a_workload_chart_from_the_registry_carries_its_library(gitops_cluster, registry, published):
    rendered = helm(gitops_cluster, "template", "agent-a", f"{registry.charts}/agent", "--version", published["agent"],
                    "--plain-http", "--set", "model=m", "--set", "modelAPI.url=http://modelapi-llm:8000").stdout
    assert "kind: Deployment" in rendered and "app.kubernetes.io/instance: agent-a" in rendered


def test_the_platform_chart_installs_from_the_registry(gitops_cluster, registry, published):
    remove_platform(gitops_cluster)
    helm(gitops_cluster, "install", RELEASE, f"{registry.charts}/kaos", "--version", published["kaos"], "--plain-http",
         "--namespace", NAMESPACE, "--create-namespace")
    try:
        wait_operator_available(gitops_cluster)
        assert release_chart(gitops_cluster) == f"kaos-{published['kaos']}"

        def served() -> bool:
            with gitops_cluster.client() as client:
                return all(client.get(f"/apis/{API_VERSION}/{plural}").status_code == 200 for plural in PLURALS.values())

        wait_until(served, 60, interval=0.1, what="the kaos.tools resources served")
    finally:
        helm(gitops_cluster, "uninstall", RELEASE, "-n", NAMESPACE, "--wait")
    assert all(crd(gitops_cluster, name) for name in KAOS_CRDS), "helm uninstall deleted a CRD marked keep"
